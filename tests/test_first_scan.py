"""No summary before the first scan: a command typed in the first moments after a start,
before the bot has listed the release's staging, never makes the summary say that staged
files are missing (on Slack the summary is edited in place: the team would see it flash).
The command takes that first look itself, or waits for the scan taking it, or leaves the
summary alone when staging cannot be listed."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable
from bot.ports.messages import ChannelKind
from bot.storage.local import LocalStorage
from tests.conftest import World

RELBOT = Path(sys.executable).with_name("relbot")
SECRETS = ("PYDOTORG_AUTH", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_TOKEN")
TAG = ReleaseTag.parse("3.14.1")


class SlowStagingList(LocalStorage):
    """Local storage whose listing of the staging folder (the scan's first read) waits
    until the test lets it go: a scan made slow on purpose."""

    def __init__(self, staging: Path, public: Path) -> None:
        super().__init__(staging, public)
        self.listing = threading.Event()  # set when a scan is inside the slow listing
        self.go = threading.Event()

    def staged_tags(self) -> list[str]:
        self.listing.set()
        self.go.wait(timeout=60)
        return super().staged_tags()


class UnreachableStaging(LocalStorage):
    def list_staging(self, tag: ReleaseTag) -> None:
        raise StagingUnreachable("Cannot reach staging (the test cut it off).")


def summaries(world: World) -> list[str]:
    posted = [m.text for m in world.chat.posts if m.kind is ChannelKind.SUMMARY]
    return posted + [m.text for _, m in world.chat.updates]


async def test_a_command_during_a_slow_first_scan_never_calls_staged_files_missing(
    world: World,
) -> None:
    world.stage("3.14.1")
    assert not (await world.say("steve", "/hold 3.14.1 installer crashes")).private
    storage = SlowStagingList(world.staging, world.public)
    world.start(storage)  # a restart: nothing of 3.14.1 seen yet
    world.chat.posts.clear()
    world.chat.updates.clear()

    scanning = asyncio.ensure_future(world.gate.scan())
    try:
        await asyncio.to_thread(storage.listing.wait, 30)
        assert storage.listing.is_set() and not scanning.done()
        reply = await world.say("steve", "/unhold 3.14.1")
    finally:
        storage.go.set()
    await scanning

    assert not reply.private, reply.text
    assert world.store.release(TAG).holds == {}
    shown = summaries(world)
    assert shown, "the summary was never rendered"
    assert not [text for text in shown if "missing" in text], shown
    assert "complete" in shown[-1] and "on hold" not in shown[-1]


async def test_a_command_before_any_scan_shows_what_is_staged(world: World) -> None:
    world.stage("3.14.1", skip=["python-3.14.1-macos11.pkg"])
    world.start()  # nothing listed since this start
    assert not (await world.say("ned", "/hold 3.14.1 notarization failed")).private

    shown = summaries(world)
    assert len(shown) == 1, shown
    assert "python-3.14.1-macos11.pkg (missing)" in shown[0]
    assert shown[0].count("(missing)") == 1  # only the file that is not there
    assert "on hold by ned: notarization failed" in shown[0]


async def test_a_command_while_staging_cannot_be_listed_leaves_the_summary_alone(
    world: World,
) -> None:
    world.stage("3.14.1")
    assert not (await world.say("steve", "/hold 3.14.1 installer crashes")).private
    world.start(UnreachableStaging(world.staging, world.public))
    world.chat.posts.clear()
    world.chat.updates.clear()

    reply = await world.say("steve", "/unhold 3.14.1")

    assert not reply.private, reply.text  # recorded, and said so
    assert world.events("3.14.1", EventKind.UNHELD) == ["unheld"]
    assert summaries(world) == []  # nothing false: the next scan renders it
    notices = world.chat.texts(ChannelKind.NOTICE)
    assert notices == ["steve lifted the hold on 3.14.1."]


def relbot_run(cwd: Path, lines: str) -> str:
    """``relbot run`` on the console in ``cwd`` (the demo), typing ``lines`` at once."""
    env = {k: v for k, v in os.environ.items() if k not in SECRETS}
    for key in ("RELBOT_CONFIG", "RELBOT_CONSOLE_FIXED_CODE"):
        env.pop(key, None)
    done = subprocess.run(
        [str(RELBOT), "run"],
        cwd=cwd,
        env=env,
        input=lines,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_commands_typed_at_start_never_flash_every_file_missing(tmp_path: Path) -> None:
    # The first start stages the demo release; the second is a restart with a summary
    # already posted (and edited in place from then on).
    for lines in ("/hold 3.14.1 wrong tarball\n/status 3.14.1\n", "/unhold 3.14.1\n"):
        out = relbot_run(tmp_path, lines)
        assert "(missing)" not in out, out
        assert "source   complete" in out, out
    assert "no longer on hold" in out
