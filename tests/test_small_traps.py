"""Small traps of a first use, each seen once: Ctrl-C on ``relbot run``, ``relbot wait | head``,
the board's port through ``make run``, a virtualenv made by a too-old Python, ``relbot
health`` on the demo, and the demo's banner after a restart in the middle of a publish. Real
processes, real signals, real pipes, a real read-only mount."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.console_driver import publish_through_console
from tests.waiting import Drained, wait_until

RELBOT = Path(sys.executable).with_name("relbot")
ROOT = Path(__file__).parents[1]
SECRETS = ("PYDOTORG_AUTH", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_TOKEN")
READY = [
    "/ready source 3.14.1",
    "/ready docs 3.14.1",
    "/as steve",
    "/ready windows 3.14.1",
    "/as ned",
    "/ready macos 3.14.1",
    "/as hugo",
    "/publish 3.14.1",
]


def _env(**extra: str) -> dict[str, str]:
    drop = {*SECRETS, "RELBOT_CONFIG", "RELBOT_CONSOLE_FIXED_CODE"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def relbot(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RELBOT), *args],
        cwd=cwd,
        env=_env(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def start(cwd: Path) -> tuple[subprocess.Popen[str], Drained, str]:
    """``relbot run`` on the demo, once its board answers: (process, its stdout, the URL)."""
    bot = subprocess.Popen(
        [str(RELBOT), "run"],
        cwd=cwd,
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    err = Drained(bot.stderr)
    line = wait_until("the board's URL", lambda: [x for x in err.lines if "board is at" in x], 90)
    found = re.search(r"http://127\.0\.0\.1:\d+/", line[0])
    assert found is not None
    return bot, err, found.group(0)


def test_ctrl_c_on_run_says_one_line_not_a_traceback(tmp_path: Path) -> None:
    bot, err, _ = start(tmp_path)
    bot.send_signal(signal.SIGINT)
    assert bot.wait(timeout=60) == 130
    text = err.text(bot)
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    after_banner = text[text.index("board is at") :].splitlines()[1:]
    assert [line for line in after_banner if line.strip()] == [
        "relbot: interrupted. Whatever was under way resumes at the next relbot run."
    ]
    assert bot.stdout is not None
    bot.stdout.close()


def test_health_checks_the_demo_at_the_board_it_printed(tmp_path: Path) -> None:
    bot, _, url = start(tmp_path)
    try:
        healthy = relbot(tmp_path, "health", "--board", url)
        assert healthy.returncode == 0, healthy.stderr
        assert healthy.stdout == f"relbot health: {url}healthz answered 200.\n"
        told = relbot(tmp_path, "health")  # the demo's port is not in any config
        assert told.returncode == 1
        assert "relbot health --board http://127.0.0.1:PORT/" in told.stderr
    finally:
        assert bot.stdin is not None
        bot.stdin.close()
        bot.wait(timeout=60)
    gone = relbot(tmp_path, "health", "--board", url)
    assert gone.returncode == 1 and "did not answer" in gone.stderr


def test_wait_into_a_reader_that_went_away_ends_without_a_traceback(tmp_path: Path) -> None:
    fixed = {"RELBOT_CONSOLE_FIXED_CODE": "K7Q2XF3M"}
    lines = [*READY, "/publish 3.14.1 confirm K7Q2XF3M"]
    done = subprocess.run(
        [str(RELBOT), "run"],
        cwd=tmp_path,
        env=_env(**fixed),
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Published 3.14.1" in done.stdout, done.stdout + done.stderr
    read, write = os.pipe()
    wait = subprocess.Popen(
        [str(RELBOT), "wait", "3.14.1", "--until", "published"],
        cwd=tmp_path,
        env=_env(),
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(write)
    os.close(read)  # the reader is gone before the first line: `| head -0`
    _, err = wait.communicate(timeout=120)
    assert err == ""
    assert wait.returncode == 128 + signal.SIGPIPE


def _make_env() -> dict[str, str]:
    """The environment of a make the test starts as an operator would: not a sub-make of
    ``make test`` (whose MAKELEVEL and MAKEFLAGS would make it say ``make[1]:`` and print
    the folders it enters)."""
    inherited = {"MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"}
    return {k: v for k, v in _env().items() if k not in inherited}


def test_make_run_lets_the_board_port_and_other_arguments_be_chosen() -> None:
    def dry(*args: str) -> str:
        done = subprocess.run(
            ["make", "-n", "run", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            env=_make_env(),
        )
        return " ".join(done.stdout.splitlines()[-1].split())

    assert dry() == ".venv/bin/relbot run"
    assert dry("PORT=9200") == ".venv/bin/relbot run --board 9200"
    assert dry("ARGS=--as steve") == ".venv/bin/relbot run --as steve"


def _old_python() -> str | None:
    """A Python older than 3.11 that runs here: python3.10 or python3.9 on PATH, or one
    that pyenv knows (its shims run only the versions chosen, so ask pyenv for the rest)."""
    found = [shutil.which(name) for name in ("python3.10", "python3.9")]
    if pyenv := shutil.which("pyenv"):
        bare = subprocess.run([pyenv, "versions", "--bare"], capture_output=True, text=True)
        for version in bare.stdout.split():
            if re.fullmatch(r"3\.(?:[0-9]|10)\.\d+", version):
                prefix = subprocess.run([pyenv, "prefix", version], capture_output=True, text=True)
                found.append(os.path.join(prefix.stdout.strip(), "bin", "python3"))
    for candidate in found:
        if candidate is None:
            continue
        try:
            asked = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info < (3, 11))"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except OSError:
            continue
        if asked.stdout.strip() == "True":
            return candidate
    return None


OLD = _old_python()


@pytest.mark.skipif(OLD is None, reason="needs a Python older than 3.11 on this machine")
def test_make_says_in_one_line_that_the_virtualenv_was_made_by_a_too_old_python(
    tmp_path: Path,
) -> None:
    assert OLD is not None
    subprocess.run([OLD, "-m", "venv", "--without-pip", str(tmp_path / "old")], check=True)
    for target in ("run", "install"):
        done = subprocess.run(
            ["make", "-C", str(ROOT), target, f"VENV={tmp_path / 'old'}"],
            env=_make_env(),
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode != 0
        said = [line for line in done.stderr.splitlines() if not line.startswith("make: ***")]
        assert said == [
            f"make: {tmp_path / 'old'} was made by Python 3."
            + said[0].split("Python 3.", 1)[1].split(",", 1)[0]
            + f", but relbot needs Python 3.11 or later: rm -rf {tmp_path / 'old'} and make "
            f"again, or make PYTHON=python3.11 after rm -rf {tmp_path / 'old'}."
        ], done.stderr
    fresh = subprocess.run(
        ["make", "-C", str(ROOT), "run", f"VENV={tmp_path / 'new'}", f"PYTHON={OLD}"],
        env=_make_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert fresh.returncode != 0
    assert f"make: {OLD} is Python 3." in fresh.stderr
    assert "relbot needs Python 3.11 or later: make PYTHON=python3.11" in fresh.stderr
    assert not (tmp_path / "new").exists()


def test_the_banner_after_a_restart_mid_publish_says_it_goes_on_not_try_ready(
    tmp_path: Path,
) -> None:
    """A publish that stopped (public read-only for a moment) is still under way when the
    demo starts again: the banner must not offer /ready on it."""
    public = tmp_path / "relbot-data" / "public"
    mounted: list[Path] = []

    def read_only_public() -> None:
        subprocess.run(["mount", "--bind", str(public), str(public)], check=True)
        mounted.append(public)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(public)], check=True)

    try:
        session = publish_through_console(tmp_path, READY, "3.14.1", at_plan=read_only_public)
    finally:
        for where in mounted:
            subprocess.run(["umount", str(where)], check=True)
    assert "Publishing 3.14.1 stopped at promote" in session.after_confirm, session
    again = relbot(tmp_path, "run", stdin="")
    banner = again.stderr
    assert "is being published (confirmed by hugo)" in banner, banner
    assert "Try: /status" not in banner and "is staged" not in banner
    assert "3.14.1 is published" in again.stdout  # and it went on by itself
