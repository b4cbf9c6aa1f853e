"""``relbot wait`` against a console rehearsal: a real ``relbot run`` subprocess fed lines as a
release team types them, its board served on loopback, and ``relbot wait`` run as the release
automation runs it, once through the board's URL and once on the state file, side by side."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.pinned import NO_SIGNATURES, RELEASE_CYCLE_LINE
from tests.sshd import free_port
from tests.waiting import Drained, wait_until

RELBOT = Path(sys.executable).with_name("relbot")
TAG = "3.14.1"
CODE = "K7Q2XF3M"
LOOK = ["--interval", "0.2"]  # a test need not wait two seconds between looks


class Rehearsal:
    """A console bot on ``root`` (staging, public, state and config), serving its board."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.board = f"http://127.0.0.1:{self.port}"
        self.staging = root / "data" / "staging"
        self.public = root / "data" / "public"
        self.staging.mkdir(parents=True)
        self.public.mkdir(parents=True)
        (root / "relbot.toml").write_text(
            RELEASE_CYCLE_LINE
            + textwrap.dedent(f"""
                profile = "cpython"
                state = "data/state.db"
                poll_interval = 1

                [storage]
                kind = "local"
                staging = "data/staging"
                public = "data/public"

                [health]
                port = {self.port}

                [people.hugo]
                rm = ["3.14"]
                roles = ["source", "docs"]

                [people.steve]
                roles = ["windows"]

                [people.ned]
                roles = ["macos"]
            """)
            + NO_SIGNATURES,
            encoding="utf-8",
        )
        self.bot: subprocess.Popen[str] | None = None

    def stage(self, skip: tuple[str, ...] = ()) -> None:
        """Every required file of the release, as ``relbot manifest`` lists them."""
        manifest = self.relbot("manifest", TAG, check=True).stdout.splitlines()
        for line in manifest:
            _, path = line.split("\t")
            if path in skip:
                continue
            target = self.staging / TAG / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f"{path} built for {TAG}\n", encoding="utf-8")

    def start(self) -> None:
        self.bot = subprocess.Popen(
            [str(RELBOT), "run"],
            cwd=self.root,
            env={**os.environ, "RELBOT_CONSOLE_FIXED_CODE": CODE},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out = Drained(self.bot.stdout)
        self.err = Drained(self.bot.stderr)
        wait_until("the board to answer", self._board_answers)

    def _board_answers(self) -> bool:
        try:
            return httpx.get(f"{self.board}/healthz", timeout=2).status_code in (200, 503)
        except httpx.HTTPError:
            return False

    def type(self, *lines: str, reply: str | None = None) -> None:
        """Type ``lines``; with ``reply``, wait until the bot has printed it."""
        assert self.bot is not None and self.bot.stdin is not None
        self.bot.stdin.write("".join(line + "\n" for line in lines))
        self.bot.stdin.flush()
        if reply is not None:
            wait_until(f"the bot to answer {reply!r}", lambda: self.out.has(reply))

    def stop(self) -> str:
        """End of input: the bot finishes and exits 0; returns what it printed."""
        assert self.bot is not None and self.bot.stdin is not None
        self.bot.stdin.close()
        out = self.out.text(self.bot)
        assert self.bot.returncode == 0, self.err.text(self.bot)
        return out

    def relbot(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(RELBOT), *args], cwd=self.root, capture_output=True, text=True, check=check,
            timeout=60,
        )  # fmt: skip

    def waits(self, until: str, *extra: str) -> list[subprocess.Popen[str]]:
        """Two waits started now: one through the board's URL, one on the state file."""
        return [
            subprocess.Popen(
                [str(RELBOT), "wait", TAG, "--until", until, *LOOK, *extra, *where],
                cwd=self.root,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for where in (["--board", self.board], [])
        ]


@pytest.fixture
def rehearsal(tmp_path: Path) -> Iterator[Rehearsal]:
    team = Rehearsal(tmp_path)
    yield team
    if team.bot is not None and team.bot.poll() is None:
        team.bot.kill()
        team.bot.wait()


def finished(waits: list[subprocess.Popen[str]]) -> list[tuple[int, Any, str]]:
    """(exit status, JSON printed or None, stderr) of each wait, once it exits."""
    results = []
    for wait in waits:
        out, err = wait.communicate(timeout=60)
        results.append((wait.returncode, json.loads(out) if out else None, err))
    return results


def still_waiting(waits: list[subprocess.Popen[str]]) -> bool:
    return all(w.poll() is None for w in waits)


def everyone_ready(team: Rehearsal, *, but: str = "") -> None:
    holders = [("hugo", "source"), ("hugo", "docs"), ("steve", "windows"), ("ned", "macos")]
    for person, role in holders:
        if role != but:
            team.type(f"/as {person}", f"/ready {role} {TAG}", reply=f"{role} is ready for {TAG}")
    team.type("/as hugo")


def test_wait_until_ready_returns_once_every_role_said_ready(rehearsal: Rehearsal) -> None:
    rehearsal.stage()
    rehearsal.start()
    waits = rehearsal.waits("ready")
    everyone_ready(rehearsal, but="macos")
    # One look each: the board names the role's state; the state file, read alone, its claim.
    for where, missing in [
        (["--board", rehearsal.board], "not ready: macos (complete)"),
        ([], "waiting for /ready from macos"),
    ]:
        once = rehearsal.relbot("wait", TAG, "--until", "ready", "--timeout", "0", *where)
        assert (once.returncode, once.stdout) == (3, "")
        assert once.stderr == f"relbot wait: 3.14.1 is not ready after 0 s: {missing}.\n"
    assert still_waiting(waits)
    rehearsal.type("/as ned", f"/ready macos {TAG}", "/as hugo")
    for status, release, err in finished(waits):
        assert (status, err) == (0, "")
        assert release["tag"] == TAG and release["ready"] is True
        assert {r: v["state"] for r, v in release["roles"].items()} == dict.fromkeys(
            ["source", "docs", "windows", "macos"], "ready"
        )
        assert release["roles"]["macos"]["by"] == "ned"
    rehearsal.stop()


def test_wait_until_publishable_returns_when_the_stray_file_is_gone(rehearsal: Rehearsal) -> None:
    rehearsal.stage()
    stray = rehearsal.staging / TAG / "notes.txt"
    stray.write_text("to self: remove before publishing\n")
    rehearsal.start()
    everyone_ready(rehearsal)
    waits = rehearsal.waits("publishable")
    for where in (["--board", rehearsal.board], []):
        once = rehearsal.relbot("wait", TAG, "--until", "publishable", "--timeout", "0", *where)
        assert once.returncode == 3, once.stderr
        assert "is not publishable after 0 s: not publishable: staging: notes.txt (unexpected)" in (
            once.stderr
        )
    assert still_waiting(waits)
    stray.unlink()  # the bot's next scan, and the state file's next listing, see it gone
    for status, release, err in finished(waits):
        assert (status, err) == (0, "")
        assert release["publishable"] is True and release["blockers"] == []
        assert "notes.txt" not in {f["path"] for f in release["files"]}
    rehearsal.stop()


def test_wait_until_published_returns_after_the_confirmation(rehearsal: Rehearsal) -> None:
    rehearsal.stage()
    staged = {
        str(p.relative_to(rehearsal.staging / TAG)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (rehearsal.staging / TAG).rglob("*")
        if p.is_file()
    }
    rehearsal.start()
    waits = rehearsal.waits("published")
    everyone_ready(rehearsal)
    rehearsal.type(f"/publish {TAG}", reply=f"/publish {TAG} confirm {CODE}")
    assert still_waiting(waits)
    rehearsal.type(f"/publish {TAG} confirm {CODE}")
    for status, release, err in finished(waits):
        assert (status, err) == (0, "")
        assert release["published"] is True and release["published_by"] == "hugo"
        assert {f["path"]: f["sha256"] for f in release["files"]} == staged
        assert {f["status"] for f in release["files"]} == {"published"}
    assert "Published 3.14.1" in rehearsal.stop()


def test_wait_gives_up_at_the_timeout_saying_what_is_missing(rehearsal: Rehearsal) -> None:
    rehearsal.stage(skip=("python-3.14.1-macos11.pkg",))
    rehearsal.start()
    everyone_ready(rehearsal, but="macos")
    board, state_file = finished(rehearsal.waits("ready", "--timeout", "1"))
    assert board == (3, None, "relbot wait: 3.14.1 is not ready after 1 s: not ready: macos "
                              "(incomplete).\n")  # fmt: skip
    assert state_file == (3, None, "relbot wait: 3.14.1 is not ready after 1 s: waiting for "
                                   "/ready from macos.\n")  # fmt: skip
    board, state_file = finished(rehearsal.waits("published", "--timeout", "0"))
    assert board[::2] == (3, "relbot wait: 3.14.1 is not published after 0 s: not ready: "
                             "macos (incomplete).\n")  # fmt: skip
    assert state_file[::2] == (3, "relbot wait: 3.14.1 is not published after 0 s: waiting "
                                  "for /ready from macos.\n")  # fmt: skip
    rehearsal.stop()


def test_a_hold_ends_the_wait_with_who_and_why(rehearsal: Rehearsal) -> None:
    rehearsal.stage()
    rehearsal.start()
    everyone_ready(rehearsal)
    waits = rehearsal.waits("published")
    rehearsal.type("/as ned", f"/hold {TAG} notarization failed", "/as hugo")
    for status, release, err in finished(waits):
        assert status == 4 and release is None
        assert err == (
            "relbot wait: 3.14.1 is held by ned: notarization failed; wait again once "
            "someone says /unhold 3.14.1.\n"
        )
    rehearsal.stop()


def test_an_abort_ends_a_wait_for_published_but_not_a_later_one(rehearsal: Rehearsal) -> None:
    rehearsal.stage()
    rehearsal.start()
    everyone_ready(rehearsal)
    waits = rehearsal.waits("published", "--progress")
    first_looks = [  # the board knows staging; the state file alone, the claims
        "publishable; waiting for the release manager to confirm /publish 3.14.1",
        "every role is ready; waiting for /publish 3.14.1 and its confirmation",
    ]
    for wait, said in zip(waits, first_looks, strict=True):
        # Only an abort after a wait's first look ends it: let each have looked.
        assert wait.stderr is not None
        assert wait.stderr.readline() == f"relbot wait: 3.14.1: {said}\n"
    rehearsal.type(f"/publish {TAG}", reply=f"/publish {TAG} confirm {CODE}")
    # A different file already public under a planned name: the bot stops the publish
    # before anything moves, puts the files back in staging and records the abort.
    conflict = rehearsal.public / "3.14.1" / "python-3.14.1-macos11.pkg"
    conflict.parent.mkdir()
    conflict.write_text("an older, different build\n")
    rehearsal.type(f"/publish {TAG} confirm {CODE}", reply="was stopped before anything moved")
    for status, release, err in finished(waits):
        assert status == 5 and release is None
        last = err.splitlines()[-1]  # after the progress lines
        assert last.startswith("relbot wait: the publish of 3.14.1 was aborted (")
        assert "python-3.14.1-macos11.pkg is already public with different content" in last
        assert last.endswith("the release manager can say /publish 3.14.1 again.")
    # A wait begun after the abort waits for the next publish instead.
    for status, _, err in finished(rehearsal.waits("published", "--timeout", "0.5")):
        assert status == 3, err
    rehearsal.stop()


def test_a_wait_that_cannot_start_says_why_in_one_sentence(rehearsal: Rehearsal) -> None:
    nobody = f"http://127.0.0.1:{free_port()}"
    refused = rehearsal.relbot("wait", TAG, "--until", "ready", "--board", nobody)
    assert refused.returncode == 1 and refused.stderr.startswith(
        f"relbot: The board at {nobody}/api/releases/3.14.1 cannot be reached ("
    )
    no_state = rehearsal.relbot("wait", TAG, "--until", "ready")
    assert no_state.returncode == 1 and "there is no state file at" in no_state.stderr
    bad_tag = rehearsal.relbot("wait", "3.14", "--until", "ready")
    assert bad_tag.returncode == 1 and bad_tag.stderr.count("\n") == 1
    bad_until = rehearsal.relbot("wait", TAG, "--until", "shipped")
    assert bad_until.returncode == 2 and "invalid choice: 'shipped'" in bad_until.stderr
    spinning = rehearsal.relbot("wait", TAG, "--until", "ready", "--interval", "0")
    assert spinning.returncode == 2 and "'0': give at least 0.05 seconds" in spinning.stderr
    never = rehearsal.relbot("wait", TAG, "--until", "ready", "--timeout", "soon")
    assert never.returncode == 2 and "'soon' is not a number of seconds" in never.stderr
    rehearsal.start()
    for status, _, err in finished(rehearsal.waits("ready", "--timeout", "0")):
        assert (status, err) == (3, "relbot wait: 3.14.1 is not ready after 0 s: nothing is "
                                    "recorded for 3.14.1 yet.\n")  # fmt: skip
    rehearsal.stop()
