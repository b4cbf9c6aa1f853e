"""The gate, command by command: authorization, readiness, confirmation codes, publishing."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable
from bot.ports.messages import ChannelKind
from bot.service.gate import PIPELINE
from bot.storage.local import LocalStorage
from tests.conftest import World

CODE_LIKE = re.compile(r"\b[A-Z0-9]{6,12}\b")


def assert_refused(reply_text: str, private: bool, *fragments: str) -> None:
    assert private, f"expected a refusal, got: {reply_text}"
    for fragment in fragments:
        assert fragment in reply_text


# -- authorization ---------------------------------------------------------------------------


async def test_ready_by_someone_without_the_role_is_refused_and_changes_nothing(
    world: World,
) -> None:
    world.stage("3.14.1")
    reply = await world.say("steve", "/ready macos 3.14.1")
    assert_refused(reply.text, reply.private, "macos", "you hold windows")
    assert world.store.release(ReleaseTag.parse("3.14.1")).claims == {}


async def test_unknown_user_is_told_they_are_not_on_the_team_with_their_id(world: World) -> None:
    world.stage("3.14.1")
    reply = await world.gate.handle("slack", "U999", "/ready macos 3.14.1")
    assert_refused(reply.text, reply.private, "not on the release team", "U999")


async def test_publish_by_someone_who_is_not_the_rm_is_refused(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    reply = await world.say("steve", "/publish 3.14.1")
    assert_refused(reply.text, reply.private, "release manager of 3.14", "hugo")
    assert reply.confirm is None
    assert EventKind.PLANNED.value not in world.events("3.14.1")


async def test_branch_without_a_release_manager_is_refused(world: World) -> None:
    world.stage("3.12.9")
    reply = await world.say("ned", "/ready macos 3.12.9")
    assert_refused(reply.text, reply.private, "No release manager is configured for 3.12")


async def test_status_of_a_release_with_nothing_staged_answers_plainly(world: World) -> None:
    reply = await world.gate.handle("slack", "U999", "/status 3.13.2")
    assert not reply.private
    assert reply.text.startswith("3.13.2: Nothing is staged for 3.13.2 yet")


async def test_help_and_status_answer_anyone(world: World) -> None:
    world.stage("3.14.1")
    assert "/ready ROLE TAG" in (await world.gate.handle("slack", "U999", "/help")).text
    status = await world.gate.handle("slack", "U999", "/status 3.14.1")
    assert not status.private and "0 of 4 roles ready" in status.text


# -- /ready ----------------------------------------------------------------------------------


async def test_ready_names_each_missing_file(world: World) -> None:
    world.stage(
        "3.14.1", roles=["windows"], skip=["python-3.14.1-arm64.exe", "windows-3.14.1.json"]
    )
    reply = await world.say("steve", "/ready windows 3.14.1")
    assert_refused(
        reply.text,
        reply.private,
        "python-3.14.1-arm64.exe (missing)",
        "windows-3.14.1.json (missing)",
    )
    assert world.events("3.14.1", EventKind.CLAIMED) == []


async def test_ready_refuses_an_empty_file(world: World) -> None:
    world.stage("3.14.1", roles=["macos"])
    world.write("3.14.1", "python-3.14.1-macos11.pkg", b"")
    reply = await world.say("ned", "/ready macos 3.14.1")
    assert_refused(reply.text, reply.private, "python-3.14.1-macos11.pkg (empty)")


async def test_ready_refuses_a_file_still_growing_between_two_listings(world: World) -> None:
    world.stage("3.14.1", roles=["macos"])
    pkg = world.staging / "3.14.1" / "python-3.14.1-macos11.pkg"
    world.during_settle.append(lambda: pkg.write_bytes(pkg.read_bytes() + b"more bytes"))
    reply = await world.say("ned", "/ready macos 3.14.1")
    assert_refused(reply.text, reply.private, "python-3.14.1-macos11.pkg (uploading)")


async def test_ready_refuses_a_partial_upload_name(world: World) -> None:
    world.stage("3.14.1", roles=["macos"], skip=["python-3.14.1-macos11.pkg"])
    world.write("3.14.1", "python-3.14.1-macos11.pkg.part", b"half")
    reply = await world.say("ned", "/ready macos 3.14.1")
    assert_refused(reply.text, reply.private, "python-3.14.1-macos11.pkg (missing)")


async def test_a_settled_file_is_not_uploading_merely_because_it_is_recent(world: World) -> None:
    world.stage("3.14.1", roles=["macos"])
    reply = await world.say("ned", "/ready macos 3.14.1")
    assert not reply.private, reply.text
    assert "macos is ready for 3.14.1: 1 file" in reply.text


async def test_ready_with_nothing_staged_says_where_to_upload(world: World) -> None:
    reply = await world.say("ned", "/ready macos 3.14.1")
    assert_refused(reply.text, reply.private, "Nothing is staged for 3.14.1", "staging/3.14.1/")


async def test_docs_are_not_part_of_a_beta(world: World) -> None:
    world.stage("3.14.0b3")
    reply = await world.say("hugo", "/ready docs 3.14.0b3")
    assert_refused(reply.text, reply.private, "docs is not part of 3.14.0b3")


async def test_claims_survive_a_restart(world: World) -> None:
    world.stage("3.14.1")
    await world.say("ned", "/ready macos 3.14.1")
    world.start()
    claims = world.store.release(ReleaseTag.parse("3.14.1")).claims
    assert list(claims) == ["macos"] and claims["macos"].person == "ned"


# -- staging changes -------------------------------------------------------------------------


async def test_a_file_changed_after_ready_withdraws_the_claim_with_a_notice(world: World) -> None:
    world.stage("3.14.1")
    await world.say("ned", "/ready macos 3.14.1")
    world.write("3.14.1", "python-3.14.1-macos11.pkg", "rebuilt installer\n")
    await world.gate.scan()
    assert "macos" not in world.store.release(ReleaseTag.parse("3.14.1")).claims
    notices = world.chat.texts(ChannelKind.NOTICE)
    assert any("python-3.14.1-macos11.pkg changed after /ready" in n for n in notices), notices


async def test_a_touched_but_identical_file_keeps_the_claim(world: World) -> None:
    world.stage("3.14.1")
    await world.say("ned", "/ready macos 3.14.1")
    pkg = world.staging / "3.14.1" / "python-3.14.1-macos11.pkg"
    os.utime(pkg, (1, 1))
    await world.gate.scan()
    assert "macos" in world.store.release(ReleaseTag.parse("3.14.1")).claims


async def test_scan_updates_the_summary_only_when_something_changed(world: World) -> None:
    world.stage("3.14.1")
    await world.gate.scan()
    await world.gate.scan()
    summaries = [m for m in world.chat.posts if m.kind is ChannelKind.SUMMARY]
    assert len(summaries) == 1 and world.chat.updates == []
    world.write("3.14.1", "stray.txt", "oops")
    await world.gate.scan()
    assert len(world.chat.updates) == 1
    assert "stray.txt" in world.chat.updates[0][1].text


class FlakyStorage(LocalStorage):
    def __init__(self, staging: Path, public: Path) -> None:
        super().__init__(staging, public)
        self.down = False

    def staged_tags(self) -> list[str]:
        if self.down:
            raise StagingUnreachable("Cannot reach downloads.example.org:22 (timed out).")
        return super().staged_tags()


async def test_unreachable_staging_is_noticed_once_and_recovery_once(world: World) -> None:
    storage = FlakyStorage(world.staging, world.public)
    world.start(storage)
    world.stage("3.14.1")
    storage.down = True
    for _ in range(6):
        await world.gate.scan()
    storage.down = False
    for _ in range(12):  # back-off skips some scans; recovery is seen within a few
        await world.gate.scan()
    notices = world.chat.texts(ChannelKind.NOTICE)
    assert sum("Cannot scan staging" in n for n in notices) == 1, notices
    assert sum("reachable again" in n for n in notices) == 1, notices


# -- holds -----------------------------------------------------------------------------------


async def test_hold_blocks_publish_until_unhold(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    assert not (await world.say("ned", "/hold 3.14.1 notarization failed")).private
    blocked = await world.say("hugo", "/publish 3.14.1")
    assert_refused(blocked.text, blocked.private, "held by ned: notarization failed")
    refused = await world.say("steve", "/unhold 3.14.1")
    assert_refused(refused.text, refused.private, "held by ned")
    assert not (await world.say("ned", "/unhold 3.14.1")).private
    await world.plan("3.14.1")


async def test_the_rm_can_lift_anyones_hold(world: World) -> None:
    world.stage("3.14.1")
    await world.say("eve", "/hold 3.14.1")
    assert not (await world.say("hugo", "/unhold 3.14.1")).private
    assert world.store.release(ReleaseTag.parse("3.14.1")).holds == {}


# -- /publish and confirmation ---------------------------------------------------------------


async def test_unexpected_file_blocks_publish(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    world.write("3.14.1", "notes-for-me.txt", "do not ship")
    reply = await world.say("hugo", "/publish 3.14.1")
    assert_refused(reply.text, reply.private, "notes-for-me.txt (unexpected)")


async def test_unclaimed_role_blocks_publish(world: World) -> None:
    world.stage("3.14.1")
    await world.say("ned", "/ready macos 3.14.1")
    reply = await world.say("hugo", "/publish 3.14.1")
    assert_refused(reply.text, reply.private, "nobody said /ready windows 3.14.1")


async def test_publish_plan_then_confirm_makes_every_file_public(world: World) -> None:
    staged = world.stage("3.14.1")
    world.write("3.14.1", "Python-3.14.1.tgz.sigstore", "{}")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    assert world.public_files() == set()
    reply = await world.say("hugo", line)
    assert not reply.private, reply.text
    expected = {
        f"doc/3.14.1/{p[len('docs/') :]}" if p.startswith("docs/") else f"3.14.1/{p}"
        for p in [*staged, "Python-3.14.1.tgz.sigstore"]
    }
    assert world.public_files() == expected
    assert world.staged_files("3.14.1") == set()
    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert len(world.chat.texts(ChannelKind.ANNOUNCEMENT)) == 1
    again = await world.say("steve", "/ready windows 3.14.1")
    assert_refused(again.text, again.private, "already published")


async def test_wrong_confirmation_code_is_refused_without_echoing_it(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    await world.plan("3.14.1")
    reply = await world.say("hugo", "/publish 3.14.1 confirm ZZZZ9999")
    assert_refused(reply.text, reply.private, "not valid for 3.14.1")
    assert not CODE_LIKE.search(reply.text.replace("3.14.1", ""))
    assert world.public_files() == set()


async def test_expired_confirmation_code_is_refused(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.clock.advance(601)
    reply = await world.say("hugo", line)
    assert_refused(reply.text, reply.private, "expired")
    assert world.public_files() == set()


async def test_code_of_another_rm_of_the_branch_is_refused(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1", person="hugo")
    reply = await world.say("alice", line)
    assert_refused(reply.text, reply.private, "issued to hugo")
    assert world.public_files() == set()


async def test_a_newer_plan_replaces_the_older_code(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    old = await world.plan("3.14.1")
    await world.plan("3.14.1")
    reply = await world.say("hugo", old)
    assert_refused(reply.text, reply.private, "replaced by a newer plan")


async def test_reused_confirmation_code_is_refused(world: World, tmp_path: Path) -> None:
    world.stage("3.14.0rc1")
    await world.ready_all("3.14.0rc1")
    line = await world.plan("3.14.0rc1")
    # A different file already public under the same name stops the publish before any move.
    conflict = world.public / "3.14.0" / "python-3.14.0rc1-macos11.pkg"
    conflict.parent.mkdir(parents=True)
    conflict.write_text("an older, different build")
    first = await world.say("hugo", line)
    assert first.private and "was stopped before anything moved" in first.text
    assert any("before anything moved" in n for n in world.chat.texts(ChannelKind.NOTICE))
    assert world.public_files() == {"3.14.0/python-3.14.0rc1-macos11.pkg"}
    second = await world.say("hugo", line)
    assert_refused(second.text, second.private, "already used")


async def test_a_file_changed_between_publish_and_confirm_is_refused_and_nothing_moves(
    world: World,
) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.write("3.14.1", "python-3.14.1-amd64.exe.sigstore", "{}")  # a new sidecar
    reply = await world.say("hugo", line)
    assert_refused(
        reply.text,
        reply.private,
        "Staging changed since the plan",
        "python-3.14.1-amd64.exe.sigstore added",
    )
    assert world.public_files() == set()
    world.write("3.14.1", "python-3.14.1.exe", "tampered")  # a claimed file changes
    reply = await world.say("hugo", line)
    assert_refused(reply.text, reply.private, "cannot be published yet")
    assert "windows" not in world.store.release(ReleaseTag.parse("3.14.1")).claims
    assert world.public_files() == set()


async def test_respin_withdraws_every_claim_and_the_pending_code(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    reply = await world.say("hugo", "/respin 3.14.1")
    assert not reply.private, reply.text
    state = world.store.release(ReleaseTag.parse("3.14.1"))
    assert state.claims == {} and state.offer is None
    assert world.staged_files("3.14.1")  # staging left alone
    assert_refused(*(lambda r: (r.text, r.private))(await world.say("hugo", line)), "re-spin")


async def test_unready_by_the_rm_withdraws_someone_elses_claim(world: World) -> None:
    world.stage("3.14.1")
    await world.say("ned", "/ready macos 3.14.1")
    reply = await world.say("hugo", "/unready macos 3.14.1")
    assert not reply.private
    steve = await world.say("steve", "/unready macos 3.14.1")
    assert_refused(steve.text, steve.private, "Only a macos person or an RM")


# -- promotion ---------------------------------------------------------------------------------


async def test_prerelease_merges_into_an_existing_public_folder_without_clobbering(
    world: World,
) -> None:
    earlier = world.public / "3.14.0"
    earlier.mkdir(parents=True)
    (earlier / "python-3.14.0b3.exe").write_text("b3 installer")
    (earlier / "amd64b3").mkdir()
    (earlier / "amd64b3" / "core.msi").write_text("b3 msi")
    world.stage("3.14.0rc1")
    world.write("3.14.0rc1", "amd64rc1/core.msi", "rc1 msi")
    await world.ready_all("3.14.0rc1")
    reply = await world.say("hugo", await world.plan("3.14.0rc1"))
    assert not reply.private, reply.text
    public = world.public_files()
    assert {"3.14.0/python-3.14.0b3.exe", "3.14.0/amd64b3/core.msi"} <= public
    assert "3.14.0/amd64rc1/core.msi" in public
    assert "3.14.0/windows-3.14.0rc1.json" in public
    assert (earlier / "python-3.14.0b3.exe").read_text() == "b3 installer"
    assert world.staged_files("3.14.0rc1") == set()


class Crash(BaseException):
    """Stands for the process dying: nothing in the bot catches it."""


class CrashingStorage(LocalStorage):
    def __init__(self, staging: Path, public: Path, after: int) -> None:
        super().__init__(staging, public)
        self.moves_left = after

    def _link(self, source: Path, target: Path) -> None:
        if self.moves_left == 0:
            raise Crash
        self.moves_left -= 1
        super()._link(source, target)

    def _rename(self, source: Path, target: Path) -> None:
        if self.moves_left == 0:
            raise Crash
        self.moves_left -= 1
        super()._rename(source, target)


@pytest.mark.parametrize("tag", ["3.14.0rc1", "3.14.1"])
async def test_crash_between_two_moves_then_restart_publishes_exactly_once(
    world: World, tag: str
) -> None:
    parsed = ReleaseTag.parse(tag)
    if parsed.is_prerelease:  # an existing folder: per-file moves
        (world.public / parsed.version).mkdir(parents=True)
        (world.public / parsed.version / "python-3.14.0b3.exe").write_text("b3")
    staged = world.stage(tag)
    await world.ready_all(tag)
    line = await world.plan(tag)
    world.start(CrashingStorage(world.staging, world.public, after=1))
    with pytest.raises(Crash):
        await world.say("hugo", line)
    half = world.public_files()
    assert 0 < len(half - {"3.14.0/python-3.14.0b3.exe"}) < len(staged)

    world.start()  # the restarted bot resumes from the journal
    await world.gate.resume()
    await world.gate.resume()
    public = world.public_files() - {"3.14.0/python-3.14.0b3.exe"}
    assert len(public) == len(staged)
    assert world.staged_files(tag) == set()
    assert world.events(tag, EventKind.PUBLISHED) == ["published"]
    assert world.events(tag, EventKind.STEP_DONE).count("step-done") == len(PIPELINE)
    assert len(world.chat.texts(ChannelKind.ANNOUNCEMENT)) == 1


# -- malformed input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("/ready", "Usage: /ready ROLE TAG"),
        ("/ready macos", "Usage: /ready ROLE TAG"),
        ("/ready macos 3.14", "'3.14' is not a release tag"),
        ("/ready macos ../3.14.1", "is not a release tag"),
        ("/ready wizard 3.14.1", "'wizard' is not a role; roles are source, docs, windows"),
        ("/ready macos 3.14.1\u200b", "is not a release tag"),
        ("/réady macos 3.14.1", "is not a command"),
        ("/ready macos " + "9" * 10_000, "characters long"),
        ("hello bot", "Commands start with '/'"),
        ("/publish 3.14.1 confirm", "Usage: /publish TAG"),
        ("/publish 3.14.1 confirm 12", "6 to 12 letters and digits"),
    ],
)
async def test_malformed_commands_get_one_clear_sentence_and_change_nothing(
    world: World, line: str, fragment: str
) -> None:
    world.stage("3.14.1")
    reply = await world.say("ned", line)
    assert_refused(reply.text, reply.private, fragment)
    assert len(reply.text) < 300 and reply.text.count("\n") == 0
    assert world.store.tags() == []


async def test_a_refused_command_for_an_unknown_release_opens_no_release(world: World) -> None:
    await world.gate.handle("slack", "U999", "/ready macos 3.14.7")
    await world.gate.scan()
    assert world.chat.posts == []
    status = await world.say("eve", "/status")
    assert status.text.startswith("No open releases")
