"""The publish's runner, as the channel and python.org see it: a publish that waits says at
which step and whether /abort still cancels it; one that stops says whether anything of it
is public (and assumes so when storage cannot tell); one undone by itself drops the bot's
copies and calls the people who must act; /abort says what it left; and every failed attempt
is counted for the operator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.domain.plan import PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from bot.http_client import RetryPolicy
from bot.ports.messages import ChannelKind, ChannelMessage
from bot.pydotorg.registry import PydotorgRegistry
from bot.storage.local import LocalStorage
from bot.web.board import release_view
from tests.conftest import RecordingChat, World
from tests.doubles.pydotorg import PydotorgDouble
from tests.test_metrics import value

TAG = "3.14.1"
PKG = "python-3.14.1-macos11.pkg"
EXE = "python-3.14.1.exe"


class Faulty(LocalStorage):
    """Local folders with the faults a server has, switched on and off by the test: a full
    disk while copying, a public folder that cannot be looked at, copies that cannot be
    dropped."""

    disk_full = False
    blind = False
    undroppable = False

    def freeze(self, plan: PublishPlan, *, fresh: bool = True) -> list[str]:
        if self.disk_full:
            raise StorageError(f"Cannot copy the files of {plan.tag}: No space left on device.")
        return super().freeze(plan, fresh=fresh)

    def in_public(self, plan: PublishPlan) -> list[str]:
        if self.blind:
            raise StorageError(f"Cannot look at {self.public}: Connection timed out.")
        return super().in_public(plan)

    def discard(self, tag: ReleaseTag) -> None:
        if self.undroppable:
            raise StorageError(f"Cannot drop the copies of {tag}: Connection timed out.")
        super().discard(tag)


def faulty(world: World) -> Faulty:
    storage = Faulty(world.staging, world.public)
    world.start(storage)
    return storage


def notices(world: World) -> list[ChannelMessage]:
    assert isinstance(world.chat, RecordingChat)
    return [m for m in world.chat.posts if m.kind is ChannelKind.NOTICE]


def told(world: World, words: str) -> ChannelMessage:
    """The one notice that says ``words``."""
    (notice,) = [n for n in notices(world) if words in n.text]
    return notice


async def confirm(world: World, tag: str = TAG) -> str:
    """Stage ``tag``, claim it, confirm its publish; the confirm reply's text."""
    world.stage(tag)
    await world.ready_all(tag)
    reply = await world.say("hugo", await world.plan(tag))
    return reply.text


def frozen(world: World, tag: str = TAG) -> Path:
    """The bot's own copies of ``tag``, in its work folder."""
    return world.storage.work / "frozen" / tag


async def aborted_reason(world: World, tag: str = TAG) -> str:
    """Why the last publish of ``tag`` was aborted, as the board (and ``relbot wait``)
    shows it."""
    parsed = ReleaseTag.parse(tag)
    observed = await world.gate.observed(parsed)
    view = release_view(world.profile, parsed, observed, world.store.events(parsed), now=0)
    aborted = view.to_json()["aborted"]
    assert aborted is not None
    return str(aborted["reason"])


# -- waiting ------------------------------------------------------------------------------------


async def test_a_publish_waiting_at_the_freeze_says_abort_cancels_it_as_nothing_is_public(
    world: World,
) -> None:
    storage = faulty(world)
    storage.disk_full = True

    reply = await confirm(world)

    said = (
        "Publishing 3.14.1 stopped at freeze: Cannot copy the files of 3.14.1: No space left "
        "on device. It resumes by itself once that is fixed; /abort 3.14.1 cancels it (nothing "
        "of it is public)."
    )
    assert reply == f"Publishing 3.14.1 did not finish. {said}"
    notice = told(world, "stopped at freeze")
    assert notice.text == said and notice.tag == TAG and notice.mentions == ("hugo",)
    storage.disk_full = False
    await world.gate.scan()
    assert world.events(TAG, EventKind.PUBLISHED) == ["published"]


async def test_a_publish_waiting_at_the_promotion_says_abort_cancels_it_while_nothing_is_public(
    world: World,
) -> None:
    world.public.mkdir(parents=True)
    (world.public / TAG).write_text("a file where the release's folder goes")

    reply = await confirm(world)

    assert "Publishing 3.14.1 did not finish. Publishing 3.14.1 stopped at promote: " in reply
    assert reply.endswith(
        "It resumes by itself once that is fixed; /abort 3.14.1 cancels it while nothing of "
        "it is public."
    )
    assert told(world, "stopped at promote").mentions == ("hugo",)


@pytest.fixture
def api() -> Iterator[PydotorgDouble]:
    with PydotorgDouble() as double:
        yield double


def registry_down(world: World, api: PydotorgDouble) -> None:
    """python.org's API failing every registration: the step after the promotion waits."""
    api.add_release(f"Python {TAG}")
    once = RetryPolicy(attempts=1, backoff=0.0, sleep=lambda _: None)
    world.conn.registry = PydotorgRegistry(api.url, "rm:key", world.profile, retry=once)
    api.fail("create", status=503, times=1000)


async def test_a_step_after_the_promotion_waits_in_the_words_of_its_cause_with_no_abort(
    world: World, api: PydotorgDouble
) -> None:
    registry_down(world, api)

    reply = await confirm(world)

    said = (
        "Publishing 3.14.1 stopped at register: python.org refused to create the record 'XZ "
        "compressed source tarball' (https://www.python.org/ftp/python/3.14.1/Python-3.14.1"
        ".tar.xz) (HTTP 503: injected fault). It resumes by itself once that is fixed."
    )
    assert reply == f"Publishing 3.14.1 did not finish. {said}"
    assert told(world, "stopped at register").text == said


async def test_a_publish_past_the_promotion_is_never_aborted_even_when_storage_cannot_tell(
    world: World, api: PydotorgDouble
) -> None:
    storage = faulty(world)
    registry_down(world, api)
    await confirm(world)
    storage.blind = True  # the journal says the files were moved: that is enough

    refused = await world.say("hugo", "/abort 3.14.1")

    assert refused.private
    assert "Publishing 3.14.1 cannot be aborted: " in refused.text
    assert "public already, and published files are never taken back" in refused.text
    assert world.events(TAG, EventKind.ABORTED) == []


# -- stopping -----------------------------------------------------------------------------------


async def test_a_publish_stopped_at_the_freeze_is_told_as_abortable_and_abort_says_what_it_left(
    world: World,
) -> None:
    work = world.storage.work
    work.mkdir(mode=0o755)  # not the bot's 0700: never used
    work.chmod(0o755)

    reply = await confirm(world)

    assert reply.startswith(
        f"Publishing 3.14.1 did not finish. Publishing 3.14.1 stopped at freeze: The bot's "
        f"work folder {work} cannot be trusted"
    )
    way_out = (
        "Nothing of it is public: /abort 3.14.1 cancels it (staging still holds the files as "
        "uploaded), then /publish 3.14.1 starts again."
    )
    assert reply.endswith(way_out)
    notice = told(world, "stopped at freeze")
    assert notice.text.endswith(way_out)
    assert notice.tag == TAG and notice.mentions == ("hugo",)

    aborted = await world.say("hugo", "/abort 3.14.1")

    assert not aborted.private, aborted.text
    assert f"The bot's copies were not removed: The bot's work folder {work}" in aborted.text
    assert "Claims are unchanged and /publish 3.14.1 works again." in aborted.text


async def test_abort_of_a_waiting_publish_tells_the_channel_and_the_board_who_aborted_it(
    world: World,
) -> None:
    world.public.mkdir(parents=True)
    (world.public / TAG).write_text("a file where the release's folder goes")
    await confirm(world)
    staged = world.staged_files(TAG)

    aborted = await world.say("hugo", "/abort 3.14.1")

    assert aborted.text == (
        "Publishing 3.14.1 was aborted: nothing was made public, and staging holds the files "
        "as the uploaders left them (the bot only copied them). Claims are unchanged and "
        "/publish 3.14.1 works again."
    )
    notice = told(world, "was aborted")
    assert notice.tag == TAG
    assert notice.text == (
        "The publish of 3.14.1 was aborted (aborted by hugo with /abort); nothing was made public."
    )
    assert await aborted_reason(world) == "aborted by hugo with /abort"
    assert world.staged_files(TAG) == staged
    assert world.public_files() == {TAG}  # the file in the way, nothing of the release


async def stopped_while_blind(world: World) -> Faulty:
    """Confirm, wait at the promotion, change the bot's copy of the .pkg, then stop while
    storage cannot look at the public folder (it stays blind): a stop that may be partly
    public."""
    storage = faulty(world)
    world.public.mkdir(parents=True)
    blocker = world.public / TAG
    blocker.write_text("a file where the release's folder goes")
    await confirm(world)  # waits at the promotion
    copy = frozen(world) / "tree" / TAG / PKG
    copy.chmod(0o644)
    copy.write_bytes(b"tampered")
    blocker.unlink()
    storage.blind = True
    await world.gate.scan()  # stops
    return storage


async def test_when_storage_cannot_tell_what_is_public_a_stop_is_never_offered_as_abortable(
    world: World,
) -> None:
    await stopped_while_blind(world)

    notice = told(world, "copies differ from the confirmed plan")
    assert "Files of it are public already, so it cannot be aborted" in notice.text
    assert "Nothing of it is public" not in notice.text
    refused = await world.say("hugo", "/abort 3.14.1")
    assert refused.private
    assert refused.text.startswith(
        f"Cannot tell what is public yet: Cannot look at {world.public}: Connection timed out."
    )


async def test_every_failed_attempt_is_counted_a_wait_at_each_try_and_a_stop_once(
    world: World,
) -> None:
    world.public.mkdir(parents=True)
    blocker = world.public / TAG
    blocker.write_text("a file where the release's folder goes")
    await confirm(world)  # waits at the promotion
    await world.gate.scan()  # tried again: waits again
    assert value(world.gate.metrics, "relbot_publish_failures_total") == 2

    copy = frozen(world) / "tree" / TAG / PKG
    copy.chmod(0o644)
    copy.write_bytes(b"tampered")
    blocker.unlink()
    await world.gate.scan()  # stops
    await world.gate.scan()  # a stopped publish is not tried again

    assert "Nothing of it is public" in told(world, "copies differ from the confirmed plan").text
    assert value(world.gate.metrics, "relbot_publish_failures_total") == 3


# -- undone by itself ---------------------------------------------------------------------------


async def test_a_public_file_in_the_way_undoes_the_publish_and_drops_the_bots_copies(
    world: World,
) -> None:
    in_the_way = world.public / TAG / "Python-3.14.1.tgz"
    in_the_way.parent.mkdir(parents=True)
    world.stage(TAG)
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    in_the_way.write_text("another build, public since the plan")

    reply = await world.say("hugo", line)

    assert reply.text.startswith("Publishing 3.14.1 was stopped before anything moved: ")
    assert reply.text.endswith(
        "Nothing was made public and staging is as it was; /publish 3.14.1 works again once "
        "that is sorted out."
    )
    notice = told(world, "was stopped before anything moved")
    assert notice.text == reply.text
    assert notice.tag == TAG and notice.mentions == ("hugo",)
    assert "Python-3.14.1.tgz" in await aborted_reason(world)
    assert not frozen(world).exists()
    assert world.public_files() == {f"{TAG}/Python-3.14.1.tgz"}


async def test_copies_that_cannot_be_dropped_leave_the_publish_undone_all_the_same(
    world: World,
) -> None:
    storage = faulty(world)
    storage.undroppable = True
    in_the_way = world.public / TAG / "Python-3.14.1.tgz"
    in_the_way.parent.mkdir(parents=True)
    world.stage(TAG)
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    in_the_way.write_text("another build, public since the plan")

    reply = await world.say("hugo", line)

    assert reply.text.startswith("Publishing 3.14.1 was stopped before anything moved: ")
    assert world.events(TAG, EventKind.ABORTED) == ["aborted"]
    in_the_way.unlink()
    storage.undroppable = False
    done = await world.say("hugo", await world.plan(TAG))
    assert "Published 3.14.1" in done.text, done.text


async def test_a_file_changed_while_the_freeze_waited_withdraws_its_claim_and_calls_its_claimer(
    world: World,
) -> None:
    storage = faulty(world)
    storage.disk_full = True
    await confirm(world)  # waits at the freeze
    world.write(TAG, EXE, "rebuilt after the confirmation\n")
    storage.disk_full = False

    await world.gate.scan()

    notice = told(world, "was stopped before anything moved")
    assert notice.text == (
        f"Publishing 3.14.1 was stopped before anything moved: staging changed since the plan "
        f"({EXE} changed), so the confirmed files cannot be had. Nothing was made public; the "
        "claims on those files were withdrawn: say /ready again once they are right, then "
        "/publish 3.14.1."
    )
    assert notice.tag == TAG and notice.mentions == ("hugo", "steve")
    assert f"{EXE} changed" in await aborted_reason(world)
    assert world.public_files() == set()
    assert not frozen(world).exists()
