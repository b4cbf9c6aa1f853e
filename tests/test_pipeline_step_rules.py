"""What the publish's later steps tell the channel and the audit: the CDN purge, the
announcement, the tidying of staging, and the signing at the confirmation when it cannot
finish (a restart, a copy that cannot take the signatures, a bundle that does not verify, the
CA or the log going away)."""

from __future__ import annotations

import re
import shutil
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from bot.domain.history import Event, EventKind
from bot.domain.tags import ReleaseTag
from bot.http_client import RetryPolicy
from bot.ports.messages import ChannelKind, ChannelMessage
from bot.pydotorg.cdn import CdnPurger
from bot.service.render import event_detail
from bot.signing.verifier import SigstoreVerifier
from tests.conftest import RecordingChat, World
from tests.doubles.pydotorg import PydotorgDouble
from tests.signing_fixtures import RM, instance_world, signed_paths, sigstore_instance
from tests.sigstore_instance import SigstoreInstance
from tests.test_pinning import AppendedAfterTheMove

__all__ = ["sigstore_instance"]

TAG = "3.14.1"
PKG = "python-3.14.1-macos11.pkg"
EXE = "python-3.14.1-amd64.exe"


class Killed(BaseException):
    """The bot dies here (not an error any layer may catch)."""


class AnnouncedChat(RecordingChat):
    """The channel; ``then`` runs once the release's announcement is posted (before tidy)."""

    def __init__(self) -> None:
        super().__init__()
        self.then: list[Callable[[], object]] = []

    async def post(self, message: ChannelMessage) -> str:
        ref = await super().post(message)
        if message.kind is ChannelKind.ANNOUNCEMENT:
            while self.then:
                self.then.pop(0)()
        return ref


def before_step(world: World, kind: EventKind, step: str, action: Callable[[], object]) -> None:
    """Run ``action`` just before the journal records ``kind`` of ``step`` (once)."""
    append, pending, wanted = world.store.append, [action], kind

    def hooked(tag: ReleaseTag, actor: str, kind: EventKind, **data: Any) -> Event:
        if kind is wanted and data.get("step") == step and pending:
            pending.pop()()
        return append(tag, actor, kind, **data)

    world.store.append = hooked  # type: ignore[method-assign]


def audit(world: World) -> list[str]:
    """The last column of ``relbot audit`` for the release."""
    return [event_detail(e) for e in world.store.events(ReleaseTag.parse(TAG))]


def expected(world: World) -> list[str]:
    """Every path a 3.14.1 release stages."""
    return [e.path for e in world.profile.expected(ReleaseTag.parse(TAG))]


def notices(world: World) -> list[ChannelMessage]:
    return [m for m in world.chat.posts if m.kind is ChannelKind.NOTICE]


async def confirmed(world: World) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)
    done = await world.say("hugo", await world.plan(TAG))
    assert not done.private, done.text


# -- purge, announce, tidy ------------------------------------------------------------------


async def test_a_plain_publish_is_announced_under_its_tag_and_each_step_says_what_it_did(
    world: World,
) -> None:
    await confirmed(world)

    [announced] = [m for m in world.chat.posts if m.kind is ChannelKind.ANNOUNCEMENT]
    assert announced.tag == TAG
    assert announced.text.startswith(f"{TAG} is published: ")  # not a late files' note
    assert announced.text.endswith(  # the profile's links, each after one space
        "confirmed by hugo. Release page: https://www.python.org/downloads/release/python-3141/"
        " Files: https://www.python.org/ftp/python/3.14.1/"
    ), announced.text
    lines = audit(world)
    assert "register: no release database configured" in lines
    assert "purge: no CDN configured" in lines
    assert "announce: announced" in lines
    assert "tidy: staged originals removed" in lines


@pytest.fixture
def api() -> Iterator[PydotorgDouble]:
    with PydotorgDouble() as double:
        yield double


async def test_a_failed_cdn_purge_is_told_once_naming_the_first_five_urls(
    world: World, api: PydotorgDouble
) -> None:
    templates = [
        t.replace("https://www.python.org/", api.base_url).replace(
            "https://docs.python.org/", api.base_url + "docs/"
        )
        for t in world.profile.spec.pydotorg["purge"]
    ]
    purger = CdnPurger(templates, retry=RetryPolicy(attempts=2, backoff=0.0, sleep=lambda _: None))
    world.conn.purger = purger
    api.fail("purge", nth=1, status=503, times=12)  # two attempts each: six URLs fail
    urls = purger.urls(ReleaseTag.parse(TAG))

    await confirmed(world)

    [told] = [n for n in notices(world) if "CDN purge" in n.text]
    assert told.tag == TAG
    assert f"The CDN purge of {TAG} failed for 6 URLs (" in told.text
    assert "(" + "; ".join(f"{url}: HTTP 503" for url in urls[:5]) + ")" in told.text
    assert urls[5] not in told.text
    assert "the files are public, stale pages expire on their own" in told.text
    assert f"purge: {len(urls) - 6} URLs purged, 6 failed" in audit(world)


async def test_one_original_changed_after_the_confirmation_is_left_and_called_it(
    tmp_path: Path,
) -> None:
    chat = AnnouncedChat()
    world = World(tmp_path, chat=chat)
    chat.then.append(lambda: world.write(TAG, PKG, b"rebuilt after the confirmation"))

    await confirmed(world)

    [told] = [n for n in notices(world) if "left for their uploaders" in n.text]
    assert told.tag == TAG and told.mentions == ("hugo",)
    assert told.text == (
        f"staging/{TAG}: 1 file left for their uploaders to remove: {PKG} "
        "(changed since the confirmation)"
    )
    assert world.staged_files(TAG) == {PKG}


async def test_two_originals_changed_after_the_confirmation_are_called_them(
    tmp_path: Path,
) -> None:
    chat = AnnouncedChat()
    world = World(tmp_path, chat=chat)
    chat.then += [
        lambda: world.write(TAG, PKG, b"rebuilt"),
        lambda: world.write(TAG, EXE, b"rebuilt"),
    ]

    await confirmed(world)

    [told] = [n for n in notices(world) if "left for their uploaders" in n.text]
    assert told.text == (
        f"staging/{TAG}: 2 files left for their uploaders to remove: {EXE}, {PKG} "
        "(changed since the confirmation)"
    )
    assert "tidy: staged originals removed, 2 left: changed since the confirmation" in audit(world)


async def test_a_work_folder_that_is_not_the_bot_s_leaves_staging_as_it_is_and_says_so(
    tmp_path: Path,
) -> None:
    chat = AnnouncedChat()
    world = World(tmp_path, chat=chat)
    chat.then.append(lambda: world.storage.work.chmod(0o755))

    await confirmed(world)

    [told] = [n for n in notices(world) if "staging was left as it is" in n.text]
    assert told.tag == TAG
    assert told.text.startswith(f"{TAG} is published, but staging was left as it is: ")
    assert "its mode is 755, not 700" in told.text
    assert world.staged_files(TAG) == set(expected(world))  # nothing was removed


# -- signing at the confirmation ------------------------------------------------------------


def log_in(link: str) -> str:
    """What the RM does in a browser: open the link, log in, read the code shown."""
    with urllib.request.urlopen(link, timeout=10) as page:
        return str(page.read().decode()).strip()


async def confirm_with_login(world: World) -> str:
    """Plan and confirm with a login; returns the reply's text."""
    world.stage(TAG)
    await world.ready_all(TAG)
    plan = await world.say("hugo", f"/publish {TAG}")
    assert plan.confirm is not None and plan.confirm.login_url is not None, plan.text
    reply = await world.say("hugo", plan.confirm.with_login(log_in(plan.confirm.login_url)))
    return reply.text


def called_off(world: World) -> str:
    [told] = [n.text for n in notices(world) if "called off" in n.text]
    assert told.startswith(
        f"Publishing {TAG} was called off before anything became public: signing failed ("
    )
    assert world.public_files() == set()
    assert world.events(TAG)[-1] == "aborted"
    return told


async def test_a_restart_between_signing_and_the_step_s_end_signs_nothing_again(
    tmp_path: Path, sigstore_instance: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, sigstore_instance)

    def killed() -> None:
        raise Killed

    before_step(world, EventKind.STEP_DONE, "sign", killed)
    with pytest.raises(Killed):
        await confirm_with_login(world)
    issued = sigstore_instance.certificates_issued
    world.start()
    await world.gate.resume()

    assert world.store.release(ReleaseTag.parse(TAG)).is_published
    assert sigstore_instance.certificates_issued == issued
    lines = audit(world)
    assert "sign: signed before a restart" in lines
    signed = len(signed_paths(world, expected(world)))
    assert f"{signed} files signed as {RM[0]}" in lines


async def test_a_restart_before_signing_calls_the_publish_off_for_a_new_login(
    tmp_path: Path, sigstore_instance: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, sigstore_instance)

    def killed() -> None:
        raise Killed

    before_step(world, EventKind.STEP_STARTED, "sign", killed)
    with pytest.raises(Killed):
        await confirm_with_login(world)
    world.start()  # the login was only in the bot's memory
    await world.gate.resume()

    told = called_off(world)
    assert (
        "(the login given with the confirmation is gone (the bot restarted, or an earlier "
        "attempt used it))"
    ) in told
    assert f"type /publish {TAG} for a new plan and login link, then confirm again." in told


async def test_copies_that_cannot_take_the_signatures_call_the_publish_off(
    tmp_path: Path, sigstore_instance: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    copies = world.storage.work / "frozen" / TAG
    before_step(world, EventKind.STEP_STARTED, "sign", lambda: shutil.rmtree(copies))

    await confirm_with_login(world)

    told = called_off(world)
    assert (
        f"(adding the signatures to the bot's copies failed: Cannot add to the copies of {TAG}"
        in told
    )


async def test_a_signature_that_does_not_verify_calls_the_publish_off_naming_the_file(
    tmp_path: Path, sigstore_instance: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, sigstore_instance)
    trust = str(tmp_path / "trust" / "instance.json")
    other = ("savannah@python.org", RM[1])

    def another_signer() -> None:  # the branch's signer, as the gate checks it, changed
        world.conn.verifier = SigstoreVerifier(trust, lambda tag: other)

    before_step(world, EventKind.STEP_STARTED, "sign", another_signer)

    await confirm_with_login(world)

    told = called_off(world)
    assert re.search(
        r"\(the signature of \S+ does not verify: wrong signer: expected savannah@python\.org, "
        r"found hugo@python\.org\)",
        told,
    ), told


async def test_a_ca_that_refuses_the_login_calls_the_publish_off_saying_so(
    tmp_path: Path,
) -> None:
    with SigstoreInstance() as instance:
        world = instance_world(tmp_path, instance)

        def new_token_key() -> None:  # the CA no longer takes the login's token
            instance.token_key = ec.generate_private_key(ec.SECP256R1())

        before_step(world, EventKind.STEP_STARTED, "sign", new_token_key)

        await confirm_with_login(world)

        assert "signing failed (no signing certificate (" in called_off(world)


async def test_the_log_going_down_names_how_many_files_were_not_signed_and_why(
    tmp_path: Path,
) -> None:
    with SigstoreInstance() as instance:
        world = instance_world(tmp_path, instance)
        instance.stop_log_after(3)

        await confirm_with_login(world)

        signed = len(signed_paths(world, expected(world)))
        assert re.search(
            rf"signing failed \(\d+ of {signed} files were not signed \(signing failed: ",
            called_off(world),
        )


async def test_public_files_changed_after_the_move_stop_the_publish_and_add_one_mismatch(
    world: World,
) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    world.start(AppendedAfterTheMove(world.staging, world.public))
    world.gate.metrics.public_mismatches = 4  # earlier publishes' count: this one adds one

    reply = await world.say("hugo", line)

    assert reply.private and "did not finish" in reply.text
    assert world.gate.metrics.public_mismatches == 5
    notices = world.chat.texts(ChannelKind.NOTICE)
    assert any(
        "after the move, public files are not the bot's copies "
        f"({TAG}/{PKG} is not the bot's copy); they are not registered or announced." in n
        for n in notices
    ), notices
