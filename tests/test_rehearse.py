"""``relbot rehearse`` as an RM uses it: the README's release-day lines typed into the real
command, the plan's login link fetched with a plain GET (redirects followed, no browser), the
code the page shows typed into the confirm line; then every file is public with its bundle,
python.org records them and publishes the page, the forum has the topic, the channel the
announcement, and nothing the rehearsal started is still listening once input ends."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

import bot
from bot.demo import stage_demo
from bot.domain.profile import load_profile
from tests.console_driver import RELBOT
from tests.signing_fixtures import signed_files
from tests.waiting import Drained, wait_until

TAG = "3.14.1"
CODE = "K7Q2XF"
WORDS = "This is the first maintenance release of Python 3.14."
# The README's release day, line for line.
LINES = [
    f"/ready source {TAG}",
    f"/ready docs {TAG}",
    "/as steve",
    f"/ready windows {TAG}",
    "/as ned",
    f"/ready macos {TAG}",
    "/as hugo",
    f"/announce {TAG} {WORDS}",
    f"/publish {TAG}",
]
SERVICE = re.compile(r"^  (?P<what>[^:]+): (?P<url>http://127\.0\.0\.1:\d+\S*)$")


def the_demo_files(folder: Path) -> tuple[list[str], list[str]]:
    """(every staged path, the paths that are signed) of the demo, relative to the release."""
    release = folder / TAG
    staged = stage_demo(folder, load_profile("cpython"))
    signed = signed_files(load_profile("cpython"), release, staged)
    return (
        [p.relative_to(release).as_posix() for p in staged],
        [p.relative_to(release).as_posix() for p in signed],
    )


def listening(url: str) -> bool:
    port = int(url.split(":")[2].split("/")[0])
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_a_rehearsed_release_day_ends_signed_public_registered_and_announced(
    tmp_path: Path,
) -> None:
    staged, signed = the_demo_files(tmp_path / "expected")
    rehearsal = subprocess.Popen(
        [str(RELBOT), "rehearse"],
        cwd=tmp_path,
        env={**os.environ, "RELBOT_CONSOLE_FIXED_CODE": CODE},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = Drained(rehearsal.stdout), Drained(rehearsal.stderr)
    assert rehearsal.stdin is not None
    try:
        board = wait_until(
            "the board's line",
            lambda: re.search(
                r"^The release board is at (http://127\.0\.0\.1:\d+/)$", "".join(err.lines), re.M
            ),
        ).group(1)
        rehearsal.stdin.write("\n".join(LINES) + "\n")
        rehearsal.stdin.flush()
        confirm = f"/publish {TAG} confirm {CODE} <login>"
        wait_until("the confirm line", lambda: out.has(confirm), timeout=60)
        link = re.search(r"Log in as hugo@python\.org: (\S+)", "".join(out.lines))
        assert link is not None, "".join(out.lines)
        assert link.group(1).startswith("http://127.0.0.1:")
        with urllib.request.urlopen(link.group(1), timeout=10) as page:  # follows redirects
            login = page.read().decode().strip()
        assert re.fullmatch(r"\S+", login), login

        rehearsal.stdin.write(f"/publish {TAG} confirm {CODE} {login}\n")
        rehearsal.stdin.flush()
        published = f"Published {TAG}: {len(staged) + 3 * len(signed)} files are public."
        wait_until("the publish", lambda: out.has(published), timeout=180)
        services = {m["what"]: m["url"] for line in err.lines if (m := SERVICE.match(line))}
        assert len(services) == 5, "".join(err.lines)
        site = services["Download site (the public folder)"]
        for suffix in ("", ".sigstore"):  # the download site serves the bytes and the bundle
            with urllib.request.urlopen(f"{site}{TAG}/Python-{TAG}.tar.xz{suffix}") as file:
                assert file.status == 200
        with urllib.request.urlopen(f"{board}api/releases/{TAG}", timeout=10) as answer:
            assert json.load(answer)["published"] is True
        rehearsal.stdin.close()
        rehearsal.wait(timeout=60)
        # At once: a process left behind would still hold the ports (and the pipes).
        for url in [board, *services.values()]:
            assert not listening(url), f"{url} still listens after end of input"
    finally:
        if rehearsal.poll() is None:
            rehearsal.kill()
            rehearsal.wait()
    stdout, stderr = out.text(rehearsal), err.text(rehearsal)
    assert rehearsal.returncode == 0, stderr

    (folder,) = tmp_path.glob("relbot-rehearsal-*")
    public = folder / "relbot-data" / "public"
    on_disk = {p.relative_to(public).as_posix() for p in public.rglob("*") if p.is_file()}
    for path in staged:
        where = (
            f"doc/{TAG}/{path.removeprefix('docs/')}"
            if path.startswith("docs/")
            else f"{TAG}/{path}"
        )
        for suffix in ("", ".sigstore", ".sig", ".crt") if path in signed else ("",):
            assert where + suffix in on_disk, where + suffix
    assert len(on_disk) == len(staged) + 3 * len(signed)

    report = stdout[stdout.index("The rehearsal is over") :]
    page = f"python.org: Python {TAG} has {len(signed)} file records; its release page is"
    assert f"{page} published, latest." in report
    records = re.findall(r"^  (https://www\.python\.org/ftp/python/\S+)(.*)$", report, re.M)
    assert len(records) == len(signed), report
    assert all(note == " with its .sigstore bundle" for _, note in records), report
    assert re.search(r"Discourse: 1 topic\(s\)\.\n  .+: http://127\.0\.0\.1:\d+/t/\S+", report)
    assert f"{TAG} is published:" in stdout  # the announcement in the channel
    assert WORDS in stdout
    assert re.search(r"Discussion: http://127\.0\.0\.1:\d+/t/", stdout)
    assert "published" in report.split(f"Audit of {TAG}:", 1)[1]
    assert login not in stdout + stderr  # the login code never reaches the transcript


def a_free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_board_port_is_the_one_asked_and_empty_input_stops_everything(
    tmp_path: Path,
) -> None:
    port = a_free_port()
    done = subprocess.run(
        [str(RELBOT), "rehearse", "--board", str(port)],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"\nThe release board is at http://127.0.0.1:{port}/\n" in done.stderr
    urls = [m["url"] for line in done.stderr.splitlines() if (m := SERVICE.match(line))]
    assert len(urls) == 5, done.stderr
    for url in [f"http://127.0.0.1:{port}/", *urls]:
        assert not listening(url), f"{url} still listens after end of input"
    assert "Public (" in done.stdout and ": 0 files." in done.stdout


@pytest.mark.parametrize("platform", ["slack", "discord"])
def test_a_chat_platform_rehearsal_is_refused_in_one_sentence_before_anything_starts(
    tmp_path: Path, platform: str
) -> None:
    done = subprocess.run(
        [str(RELBOT), "rehearse", "--platform", platform],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr == (
        f"relbot: relbot rehearse --platform {platform} is not available yet: only the console "
        "is rehearsed (relbot rehearse, or --platform console).\n"
    )
    assert list(tmp_path.iterdir()) == []  # no folder, no service


def test_an_installed_relbot_without_the_clone_refuses_in_one_sentence(tmp_path: Path) -> None:
    """As from a wheel: ``bot`` alone, no ``rehearsal/`` nor ``tests/`` beside it."""
    installed = tmp_path / "site-packages"
    shutil.copytree(Path(bot.__file__).parent, installed / "bot")
    here = tmp_path / "here"
    here.mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from bot.cli import main; sys.exit(main())",
            "rehearse",
        ],
        cwd=here,
        env={**os.environ, "PYTHONPATH": str(installed), "PYTHONSAFEPATH": "1"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == (
        "relbot: relbot rehearse runs from a clone of relbot (it starts the test doubles of its "
        "tests/ folder, which an installed relbot lacks): git clone it, make install, and run "
        ".venv/bin/relbot rehearse there.\n"
    )
    assert list(here.iterdir()) == []
