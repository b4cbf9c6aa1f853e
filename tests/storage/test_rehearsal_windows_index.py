"""Console rehearsals of the install-manager index: ``relbot run`` as a subprocess, the way a
release team types, on local folders and over SFTP (a real sshd), with observers on the
public folder: the live index changes only at the publish, last, and only over the copy the
plan saw."""

from __future__ import annotations

import os
import subprocess
import textwrap
import threading
from pathlib import Path

import pytest

from bot.demo import stage_demo
from bot.domain.profile import load_profile
from bot.domain.tags import ReleaseTag
from tests.console_driver import RELBOT, publish_through_console
from tests.pinned import NO_SIGNATURES
from tests.sshd import SshServer
from tests.windows_index_data import (
    LIVE_VERSIONS,
    catalog_bytes,
    index_bytes,
    stage_windows_index,
)

ROLES = ("source", "docs", "windows", "macos")


class Rehearsal:
    """A release team's machine: a config, staging and public folders, the bot's state."""

    def __init__(self, root: Path, storage_toml: str) -> None:
        self.root = root
        self.staging, self.public = root / "srv" / "staging", root / "srv" / "public"
        (root / "relbot.toml").write_text(
            textwrap.dedent(storage_toml).format(staging=self.staging, public=self.public)
            + textwrap.dedent("""
            [people.hugo]
            rm = ["3.14"]
            roles = ["source", "docs", "windows", "macos"]
            """)
            + NO_SIGNATURES
        )
        self.live_before = index_bytes(*LIVE_VERSIONS)
        self.public.mkdir(parents=True)
        self.index.write_bytes(self.live_before)
        self.catalog.write_bytes(catalog_bytes(self.live_before))

    @property
    def index(self) -> Path:
        return self.public / "index-windows.json"

    @property
    def catalog(self) -> Path:
        return self.public / "index-windows.json.cat"

    def stage(self, tag: str, *index_versions: str) -> bytes:
        stage_demo(self.staging, load_profile("cpython"), ReleaseTag.parse(tag))
        return stage_windows_index(self.staging / tag, tag, *index_versions)

    def type(self, *lines: str) -> str:
        """A session that types ``lines`` (no confirmation) and ends; returns stdout."""
        done = subprocess.run(
            [str(RELBOT), "run"],
            cwd=self.root,
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def audit(self, tag: str) -> list[str]:
        return subprocess.run(
            [str(RELBOT), "audit", tag], cwd=self.root, capture_output=True, text=True, check=True
        ).stdout.splitlines()


class IndexObserver(threading.Thread):
    """Reads the live index in a tight loop; remembers each distinct content, in order, and
    how many files the release's public folders held when the index first changed."""

    def __init__(self, rehearsal: Rehearsal, tag: str) -> None:
        super().__init__(daemon=True)
        self.rehearsal, self.tag = rehearsal, tag
        self.contents: list[bytes] = []
        self.files_when_changed: int | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        folders = [self.rehearsal.public / "3.14.1", self.rehearsal.public / "doc" / self.tag]
        while not self.stop.is_set():
            data = self.rehearsal.index.read_bytes()  # never absent: replaced by rename
            if not self.contents or self.contents[-1] != data:
                if self.contents and self.files_when_changed is None:
                    self.files_when_changed = sum(len(os.listdir(f)) for f in folders if f.exists())
                self.contents.append(data)


@pytest.fixture(params=["local", "sftp"])
def rehearsal(request: pytest.FixtureRequest, tmp_path: Path) -> Rehearsal:
    if request.param == "local":
        toml = """
            [storage]
            kind = "local"
            staging = "{staging}"
            public = "{public}"
            """
    else:
        sshd: SshServer = request.getfixturevalue("sshd")
        toml = f"""
            [storage]
            kind = "sftp"
            host = "127.0.0.1"
            port = {sshd.port}
            user = "{sshd.user}"
            key_file = "{sshd.client_key}"
            known_hosts = "{sshd.known_hosts}"
            staging = "{{staging}}"
            public = "{{public}}"
            """
    return Rehearsal(tmp_path, toml)


def test_the_live_index_changes_only_at_the_publish_and_a_stale_one_waits_for_a_rebuild(
    rehearsal: Rehearsal,
) -> None:
    first = rehearsal.stage("3.14.1", *LIVE_VERSIONS)
    stale = rehearsal.stage("3.14.2", *LIVE_VERSIONS)  # built from the same live index
    observer = IndexObserver(rehearsal, "3.14.1")
    observer.start()

    def at_plan() -> None:
        assert rehearsal.index.read_bytes() == rehearsal.live_before

    readies = [f"/ready {role} {tag}" for tag in ("3.14.1", "3.14.2") for role in ROLES]
    session = publish_through_console(
        rehearsal.root, [*readies, "/publish 3.14.1"], "3.14.1", at_plan=at_plan
    )
    observer.stop.set()
    observer.join()
    assert session.returncode == 0, session.stderr
    assert "Windows index: staged, holds 3.14.1, keeps 24 live installs" in (session.before_confirm)
    assert "Published 3.14.1: 21 files are public." in session.after_confirm
    assert observer.contents == [rehearsal.live_before, first], "the live index was seen changing"
    assert observer.files_when_changed == 12 + 7, "the index went live before the release"
    assert rehearsal.catalog.read_bytes() == catalog_bytes(first)
    assert "index:" in "\n".join(line for line in rehearsal.audit("3.14.1") if "step-done" in line)

    out = rehearsal.type("/publish 3.14.2")
    assert "3.14.2 cannot be published yet" in out
    assert "index-windows.json was built before 3.14.1 was published: rebuild it" in out
    assert rehearsal.index.read_bytes() == first

    rebuilt = stage_windows_index(rehearsal.staging / "3.14.2", "3.14.2", "3.14.1", *LIVE_VERSIONS)
    assert rebuilt != stale
    session = publish_through_console(
        rehearsal.root, ["/ready windows 3.14.2", "/publish 3.14.2"], "3.14.2"
    )
    assert session.returncode == 0, session.stderr
    assert "keeps 30 live installs" in session.before_confirm
    assert "Published 3.14.2: 21 files are public." in session.after_confirm
    assert rehearsal.index.read_bytes() == rebuilt
    assert rehearsal.catalog.read_bytes() == catalog_bytes(rebuilt)


def test_a_live_index_changed_between_confirmation_and_swap_is_left_alone(
    rehearsal: Rehearsal,
) -> None:
    staged = rehearsal.stage("3.14.1", *LIVE_VERSIONS)
    obstacle = rehearsal.public / "3.14.1"

    def at_plan() -> None:
        # A fault after the confirmation: a file where the release's public folder goes,
        # so the publish stops before anything moves, and resumes once it is cleared.
        obstacle.write_text("in the way")

    lines = [f"/ready {role} 3.14.1" for role in ROLES]
    session = publish_through_console(
        rehearsal.root, [*lines, "/publish 3.14.1"], "3.14.1", at_plan=at_plan
    )
    assert session.returncode == 0, session.stderr
    assert "Publishing 3.14.1 stopped at promote" in session.after_confirm
    assert obstacle.is_file()  # nothing was published

    other = index_bytes("3.13.10", *LIVE_VERSIONS)  # meanwhile, another publish
    rehearsal.index.write_bytes(other)
    obstacle.unlink()
    out = rehearsal.type()  # the bot restarts and resumes the confirmed publish
    assert "Publishing 3.14.1 stopped at index: the live index-windows.json changed" in out
    assert rehearsal.index.read_bytes() == other, "the changed live index was overwritten"
    assert rehearsal.catalog.read_bytes() == catalog_bytes(rehearsal.live_before)
    assert len(os.listdir(rehearsal.public / "3.14.1")) == 12  # promoted, not announced
    assert "3.14.1 is published:" not in out  # no announcement
    audit = rehearsal.audit("3.14.1")
    assert not any(line.split()[2] == "published" for line in audit)
    assert any(line.split()[2] == "stopped" for line in audit)  # the stop is journaled
    assert any("step-started" in line and line.endswith("index") for line in audit)
    aside = rehearsal.public.parent / f".relbot-{rehearsal.public.name}" / "aside" / "3.14.1"
    assert (aside / "index-windows.json").read_bytes() == staged  # the bot's copy waits there
    assert "/publish 3.14.1 now offers to finish without replacing the live index" in out
