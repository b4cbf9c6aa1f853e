"""The publishing handler's rules as the RM reads them: an RM dropped from the team since the
plan cannot confirm it; a mistyped code in the plan's last second points to the plan's own
code; an expired code names when it expired; a code refused because staging changed since
the plan names what changed (a file, the waivers, the announcement) and asks for a new plan;
/abort refused once files are public (the files named, in the right grammatical number, and
the stop's way out only when the publish stopped), an interrupted /abort finished in the name
of whoever typed it, and the succeeding /abort shown as a success; and the journal records
which plan's code each confirmation used, never the code."""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path

import pytest

from adapters.slack.blocks import reply_payload
from bot.config import load_config
from bot.domain.confirmation import hash_code
from bot.domain.history import EventKind
from bot.domain.plan import PublishPlan
from bot.domain.tags import ReleaseTag
from bot.http_client import RetryPolicy
from bot.ports.messages import ChannelKind
from bot.pydotorg.discourse import DiscourseClient
from bot.service.render import when
from bot.storage.local import LocalStorage
from tests.conftest import TEAM_TOML, World
from tests.doubles.discourse import DiscourseDouble
from tests.storage.test_windows_index_gate import live, stopped_at_index
from tests.test_runner_rules import Faulty
from tests.windows_index_data import LIVE_VERSIONS, catalog_bytes, stage_windows_index


async def test_an_expired_code_is_refused_with_the_time_it_expired(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    planned_at = world.clock()
    line = await world.plan("3.14.1")  # valid for 600 s
    world.clock.advance(2 * 86400)

    reply = await world.say("hugo", line)

    assert reply.private
    assert f"That confirmation code expired at {when(planned_at + 600)};" in reply.text
    assert reply.text.endswith("type /publish 3.14.1 for a new plan.")


async def test_a_file_rebuilt_and_claimed_again_after_the_plan_is_named_as_changed(
    world: World,
) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.write("3.14.1", "python-3.14.1.exe", "a rebuilt installer")
    assert not (await world.say("steve", "/ready windows 3.14.1")).private

    refused = await world.say("hugo", line)

    assert refused.private
    assert refused.text == (
        "Staging changed since the plan (python-3.14.1.exe changed); nothing was published, "
        "type /publish 3.14.1 for a new plan."
    )
    assert world.public_files() == set()


async def test_a_file_added_and_a_waiver_lifted_after_the_plan_are_both_named(
    world: World,
) -> None:
    arm64 = "python-3.14.1-arm64.exe"
    world.stage("3.14.1", skip=[arm64])
    assert not (await world.say("hugo", f"/waive 3.14.1 {arm64}")).private
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    assert not (await world.say("hugo", f"/unwaive 3.14.1 {arm64}")).private
    world.write("3.14.1", arm64, "a late ARM64 build")
    assert not (await world.say("steve", "/ready windows 3.14.1")).private

    refused = await world.say("hugo", line)

    assert refused.private
    assert f"since the plan ({arm64} added, waivers changed);" in refused.text


async def test_other_words_after_the_plan_are_named_as_the_announcement_changed(
    tmp_path: Path,
) -> None:
    with DiscourseDouble(users={"hugo": "forum-key"}) as forum:
        world = World(tmp_path, f'[discourse]\nurl = "{forum.url}"\nusername = "hugo"\n')
        once = RetryPolicy(attempts=1, backoff=0.0, sleep=lambda _: None)
        world.conn.forum = DiscourseClient(
            forum.url, "forum-key", "hugo", category=23, tags=["release"], retry=once
        )
        world.stage("3.14.1")
        await world.ready_all("3.14.1")
        await world.say("hugo", "/announce 3.14.1 The first maintenance release of 3.14.")
        line = await world.plan("3.14.1")
        await world.say("hugo", "/announce 3.14.1 Something else entirely, in fact.")

        refused = await world.say("hugo", line)

    assert refused.private
    assert "Staging changed since the plan (the announcement changed);" in refused.text
    assert forum.topics == []


class FailsAtTheSecondMove(LocalStorage):
    """The second move into public fails (the public root turned read-only meanwhile): the
    publish waits with what moved first public, it is not stopped."""

    moves = 0

    def _fail_second(self) -> None:
        self.moves += 1
        if self.moves == 2:
            raise PermissionError(errno.EACCES, "Permission denied")

    def _rename(self, source: Path, target: Path) -> None:
        self._fail_second()
        super()._rename(source, target)

    def _link(self, source: Path, target: Path) -> None:
        self._fail_second()
        super()._link(source, target)


async def waiting_with_files_public(world: World, tag: str) -> list[str]:
    """A confirmed publish of ``tag`` waiting at its promotion with part of it public; the
    public files, as /abort names them."""
    world.stage(tag)
    await world.ready_all(tag)
    line = await world.plan(tag)
    world.start(FailsAtTheSecondMove(world.staging, world.public))
    reply = await world.say("hugo", line)
    assert reply.private and "did not finish" in reply.text, reply.text
    assert world.store.release(ReleaseTag.parse(tag)).stopped is None  # it waits
    return sorted(world.public_files())


async def test_abort_refused_for_several_public_files_says_they_are_public(
    world: World,
) -> None:
    public = await waiting_with_files_public(world, "3.14.1")
    assert len(public) > 1

    refused = await world.say("hugo", "/abort 3.14.1")

    assert refused.private
    assert "Publishing 3.14.1 cannot be aborted:" in refused.text
    assert " are public already, and published files are never taken back" in refused.text


async def test_abort_refused_while_the_publish_waits_names_no_stop_to_get_out_of(
    world: World,
) -> None:
    await waiting_with_files_public(world, "3.14.1")
    (told,) = [n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at promote" in n]

    refused = await world.say("hugo", "/abort 3.14.1")

    # It resumes by itself: no way out to offer, and the notice is not repeated.
    assert refused.text.endswith("published files are never taken back.")
    assert told not in refused.text


async def test_abort_refused_for_one_public_file_says_it_is_public(world: World) -> None:
    # Into folders that exist already the files move one by one: the first one went.
    for folder in ("3.14.0", "doc/3.14.0rc1"):
        (world.public / folder).mkdir(parents=True)
    public = await waiting_with_files_public(world, "3.14.0rc1")
    assert len(public) == 1

    refused = await world.say("hugo", "/abort 3.14.0rc1")

    assert refused.private
    assert f"cannot be aborted: {public[0]} is public already," in refused.text


class KilledWhileAborting(LocalStorage):
    """The process dies while /abort drops the bot's copies."""

    def discard(self, tag: ReleaseTag) -> None:
        raise KeyboardInterrupt  # not an error the gate handles: the process is gone


def block_public(world: World) -> Path:
    """A file where the release's public folder goes: the promotion cannot run."""
    world.public.mkdir(parents=True, exist_ok=True)
    blocker = world.public / "3.14.1"
    blocker.write_text("a file where the release's folder goes")
    return blocker


async def test_an_abort_finished_after_a_restart_is_told_as_the_rms(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    block_public(world).touch()
    assert (await world.say("hugo", line)).private
    world.start(KilledWhileAborting(world.staging, world.public))
    with pytest.raises(KeyboardInterrupt):
        await world.say("alice", "/abort 3.14.1")

    world.start()  # restarted
    await world.gate.scan()

    (told,) = [n for n in world.chat.texts(ChannelKind.NOTICE) if "was aborted" in n]
    assert "The publish of 3.14.1 was aborted (aborted by alice with /abort)" in told


async def test_an_abort_is_shown_as_a_success(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    block_public(world)
    assert (await world.say("hugo", line)).private

    aborted = await world.say("hugo", "/abort 3.14.1")

    assert aborted.text.startswith("Publishing 3.14.1 was aborted: nothing was made public")
    (shown,) = reply_payload(aborted)["blocks"]
    assert shown["text"]["text"].startswith("✅ Publishing 3.14.1 was aborted")


def local_storage(world: World) -> Callable[..., LocalStorage]:
    """The local backend of ``world``, optionally as a subclass injecting a fault."""

    def make(mixin: type | None = None) -> LocalStorage:
        kind = LocalStorage if mixin is None else type("Faulty", (mixin, LocalStorage), {})
        return kind(world.staging, world.public)  # type: ignore[no-any-return]

    return make


async def restaged_after_a_stop_at_the_index(world: World) -> bytes:
    """3.14.1 stopped at its index step (another publish changed the live index), every other
    file public; the windows role re-stages the index against the live one and claims it.
    Returns the re-staged index."""
    await stopped_at_index(world, local_storage(world))
    rebuilt = stage_windows_index(world.staging / "3.14.1", "3.14.1", "3.13.10", *LIVE_VERSIONS)
    assert not (await world.say("steve", "/ready windows 3.14.1")).private
    return rebuilt


async def test_finishing_with_a_restaged_index_copies_only_the_index_and_keeps_the_rest(
    world: World,
) -> None:
    rebuilt = await restaged_after_a_stop_at_the_index(world)
    assert "3.14.1/Python-3.14.1.tgz" in world.public_files()
    (world.staging / "3.14.1" / "Python-3.14.1.tgz").unlink()  # public: staging is done with it

    offer = await world.say("hugo", "/publish 3.14.1")
    assert offer.confirm is not None, offer.text
    done = await world.say("hugo", offer.confirm.line)

    assert not done.private, done.text
    assert live(world) == (rebuilt, catalog_bytes(rebuilt))
    # The bot still knows its copies of what went public first: their originals are tidied
    # from staging, not told as changed after the confirmation.
    assert "python-3.14.1.exe" not in world.staged_files("3.14.1")
    assert not any("python-3.14.1.exe" in n for n in world.chat.texts(ChannelKind.NOTICE))


class StagedIndexRewrittenAtTheCopy:
    """The windows role uploads yet another index just as the bot copies the re-staged one."""

    def freeze(self, plan: PublishPlan, *, fresh: bool = True) -> list[str]:
        release = Path(str(self.staging)) / "3.14.1"  # type: ignore[attr-defined]
        stage_windows_index(release, "3.14.1", "3.13.11", "3.13.10", *LIVE_VERSIONS)
        return super().freeze(plan, fresh=fresh)  # type: ignore[misc, no-any-return]


async def test_finishing_refuses_when_the_restaged_index_changes_as_it_is_copied(
    world: World,
) -> None:
    await restaged_after_a_stop_at_the_index(world)
    recorded = live(world)
    offer = await world.say("hugo", "/publish 3.14.1")
    assert offer.confirm is not None, offer.text
    world.start(local_storage(world)(StagedIndexRewrittenAtTheCopy))

    refused = await world.say("hugo", offer.confirm.line)

    assert refused.private
    assert refused.text == (
        "Staging changed since the plan (index-windows.json changed, index-windows.json.cat "
        "changed); nothing was published, type /publish 3.14.1 for a new plan."
    )
    assert live(world) == recorded


async def test_an_rm_dropped_from_the_team_since_the_plan_cannot_confirm_it(
    tmp_path: Path,
) -> None:
    # hugo planned 3.14.1; the operator then handed 3.14 to alice alone and restarted the
    # bot. hugo's code is still within its time, but he may no longer publish 3.14.
    world = World(tmp_path)
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    config = tmp_path / "relbot.toml"
    toml = config.read_text(encoding="utf-8")
    handed_over = 'rm = ["3.14", "3.15"]'
    assert handed_over in toml
    config.write_text(toml.replace(handed_over, 'rm = ["3.15"]'), encoding="utf-8")
    world.config = load_config(config)
    world.start()

    reply = await world.say("hugo", line)

    assert reply.private
    assert reply.text == "Only a release manager of 3.14 (alice) can publish 3.14.1."
    assert "confirmed" not in world.events("3.14.1")
    assert world.public_files() == set()


async def test_a_mistyped_code_at_the_last_second_of_the_plan_points_to_the_plans_own_code(
    world: World,
) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    planned_at = world.clock()
    line = await world.plan("3.14.1")  # valid for 600 s, up to and including the 600th
    world.clock.advance(600)

    reply = await world.say("hugo", "/publish 3.14.1 confirm K7Q2XF3M")

    assert reply.text == (
        "That confirmation code is not valid for 3.14.1; use the code your plan printed "
        f"(valid until {when(planned_at + 600)}), or type /publish 3.14.1 for a new plan."
    )
    assert "Published 3.14.1" in (await world.say("hugo", line)).text  # still valid


def journaled(world: World, kind: EventKind) -> list[dict[str, object]]:
    return [dict(e.data) for e in world.store.events(ReleaseTag.parse("3.14.1")) if e.kind is kind]


async def stopped_maybe_public(world: World) -> str:
    """Confirm 3.14.1, then stop it at the promotion (its .pkg copy changed) while storage
    cannot tell what is public: a stop told as maybe partly public, finished without the
    .pkg. Returns the first confirmation's line."""
    storage = Faulty(world.staging, world.public)
    world.start(storage)
    world.public.mkdir(parents=True)
    blocker = world.public / "3.14.1"
    blocker.write_text("a file where the release's folder goes")
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    first = await world.plan("3.14.1")
    await world.say("hugo", first)  # waits at the promotion
    copy = storage.work / "frozen" / "3.14.1" / "tree" / "3.14.1" / "python-3.14.1-macos11.pkg"
    copy.chmod(0o644)
    copy.write_bytes(b"tampered")
    blocker.unlink()
    storage.blind = True
    await world.gate.scan()  # stops, as maybe partly public
    storage.blind = False
    return first


async def test_publish_after_a_stop_offers_the_finishing_plan_below_why_it_stopped(
    world: World,
) -> None:
    await stopped_maybe_public(world)
    [stopped] = [m.text for m in world.chat.posts if "copies differ" in m.text]

    offer = await world.say("hugo", "/publish 3.14.1")

    assert offer.text == (
        f"{stopped}\nTo finish without python-3.14.1-macos11.pkg (not registered, not "
        "announced; stage it again as late files), confirm within 10 minutes: "
        "/publish 3.14.1 confirm CODE0002"
    )
    assert offer.plan is not None
    assert len(offer.plan.files) == 18
    assert "python-3.14.1-macos11.pkg" not in {f.path for f in offer.plan.files}


async def test_the_journal_says_which_plan_s_code_each_confirmation_used_never_the_code(
    world: World,
) -> None:
    # The audit trail: each confirmation, the first and the one finishing a stopped
    # publish, records the hash of the code it used (that of the plan it confirmed).
    first = await stopped_maybe_public(world)
    finish = await world.plan("3.14.1")  # the plan that finishes it without the .pkg

    done = await world.say("hugo", finish)

    assert done.text.startswith("Published 3.14.1: "), done.text
    planned = [p["code_hash"] for p in journaled(world, EventKind.PLANNED)]
    confirmed = journaled(world, EventKind.CONFIRMED)
    assert (
        [c["code_hash"] for c in confirmed]
        == planned
        == [hash_code(line.rsplit(" ", 1)[1]) for line in (first, finish)]
    )
    assert confirmed[1]["finishing"] is True
    assert not any(line.rsplit(" ", 1)[1] in str(confirmed) for line in (first, finish))


async def test_the_plan_reads_as_a_whole_its_line_to_type_last(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")

    plan = await world.say("hugo", "/publish 3.14.1")

    assert plan.text == (
        "Publish plan for 3.14.1: 19 files, 894 bytes.\n"
        "  docs     7 files   -> doc/3.14.1/\n"
        "  source   4 files   -> 3.14.1/\n"
        "  windows  7 files   -> 3.14.1/\n"
        "  macos    1 file    -> 3.14.1/\n"
        "Every file becomes public together (one rename into a new folder, otherwise one "
        "millisecond batch), then the release is registered and announced.\n"
        "The release page (https://www.python.org/downloads/release/python-3141/) stays as it "
        'is: tick "Is Published" for 3.14.1 in the python.org admin.\n'
        "Signatures: not required for 3.14.1 ([signatures] require = false).\n"
        "To publish, type within 10 minutes: /publish 3.14.1 confirm CODE0001"
    )


async def test_a_code_valid_for_under_two_minutes_is_told_in_whole_minutes(
    tmp_path: Path,
) -> None:
    world = World(
        tmp_path, team_toml=TEAM_TOML.replace("confirm_timeout = 600", "confirm_timeout = 90")
    )
    world.stage("3.14.1")
    await world.ready_all("3.14.1")

    plan = await world.say("hugo", "/publish 3.14.1")

    assert plan.text.endswith("To publish, type within 1 minute: /publish 3.14.1 confirm CODE0001")
