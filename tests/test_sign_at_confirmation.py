"""Signing at the confirmation: the RM's last step is one line in chat. ``/publish TAG`` offers
a Sigstore login link (out-of-band, PKCE S256); the RM logs in and confirms with the code the
login page shows; the bot signs the frozen files' digests as the branch's signer, writes the
three signature files beside them, verifies them, and only then publishes. The real
sigstore-python signer and verifier run against the private instance of tests/sigstore_instance.
"""

from __future__ import annotations

import hashlib
import json
import logging
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from sigstore.models import Bundle

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind, ConfirmPrompt
from bot.signing.signer import sidecar_contents
from tests.conftest import World
from tests.signing_fixtures import (
    RM,
    both_rekors,
    instance_world,
    signed_paths,
    signing_instance,
    sigstore_instance,
)
from tests.sigstore_instance import SigstoreInstance

__all__ = ["signing_instance", "sigstore_instance"]

TAG = "3.14.1"
MALLORY = ("mallory@example.org", "https://github.com/login/oauth")


def log_in(link: str) -> str:
    """What the RM does in a browser: open the link, log in, read the code shown."""
    with urllib.request.urlopen(link, timeout=10) as page:
        return str(page.read().decode()).strip()


async def planned(world: World) -> ConfirmPrompt:
    world.stage(TAG)
    await world.ready_all(TAG)
    reply = await world.say("hugo", f"/publish {TAG}")
    assert reply.confirm is not None, reply.text
    return reply.confirm


def public_of(path: str) -> str:
    return (
        f"doc/{TAG}/{path.removeprefix('docs/')}" if path.startswith("docs/") else f"{TAG}/{path}"
    )


@pytest.fixture
def as_rm(signing_instance: SigstoreInstance) -> Iterator[SigstoreInstance]:
    """The instance's login page logs in the 3.14 signer (and is put back after a test)."""
    signing_instance.login_as = RM
    yield signing_instance
    signing_instance.login_as = RM


@both_rekors
async def test_one_confirm_line_signs_the_frozen_files_and_publishes_them(
    tmp_path: Path, as_rm: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, as_rm)
    prompt = await planned(world)
    paths = signed_paths(world, sorted(world.staged_files(TAG)))
    issued = as_rm.certificates_issued
    logged = (as_rm.log.size, as_rm.tiles.size)

    done = await world.say("hugo", prompt.with_login(log_in(prompt.login_url or "")))

    assert not done.private, done.text
    staged = len(world.profile.expected(ReleaseTag.parse(TAG)))
    assert done.text == f"Published {TAG}: {staged + 3 * len(paths)} files are public."
    assert as_rm.certificates_issued == issued + 1  # one login, one certificate for all
    # Every signature went to the log the signing config lists: v2 when it lists v2.
    added = (as_rm.log.size - logged[0], as_rm.tiles.size - logged[1])
    assert added == ((0, len(paths)) if as_rm.rekor_version == 2 else (len(paths), 0))
    public = world.public_files()
    for path in paths:
        for suffix in ("", ".sig", ".crt", ".sigstore"):
            assert public_of(path) + suffix in public, path + suffix
    assert not any(p.endswith(".sigstore") for p in public if p.startswith("doc/"))
    # What became public verifies against the branch's signer, as the gate checks it.
    tag = ReleaseTag.parse(TAG)
    verifier = world.verifier
    for path in paths:
        sha = hashlib.sha256((world.public / public_of(path)).read_bytes()).hexdigest()
        bundle = (world.public / (public_of(path) + ".sigstore")).read_bytes()
        assert verifier.verify(tag, path, sha, bundle).status.value == "valid", path
    events = world.events(TAG)
    # Signed after the freeze (the bot's copies are what it signs), before anything moved.
    assert events[: events.index("signed")].count("step-done") == 1
    assert events.index("signed") < events.index("published")
    assert world.events(TAG, EventKind.SIGNED) == ["signed"]
    assert world.staged_files(TAG) == set()  # the signatures were written in the bot's area


async def test_the_signature_files_are_those_relbot_sign_writes_for_the_same_bundle(
    tmp_path: Path, as_rm: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, as_rm)
    prompt = await planned(world)
    await world.say("hugo", prompt.with_login(log_in(prompt.login_url or "")))

    target = world.public / TAG / "Python-3.14.1.tgz"
    written = {s: Path(f"{target}{s}").read_bytes() for s in (".sig", ".crt", ".sigstore")}
    bundle = Bundle.from_json(written[".sigstore"])
    assert sidecar_contents(bundle) == written  # one writer for both ways of signing


async def test_the_plan_names_the_files_the_signer_and_a_pkce_login_link(
    tmp_path: Path, as_rm: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, as_rm)
    world.stage(TAG)
    await world.ready_all(TAG)
    paths = signed_paths(world, sorted(world.staged_files(TAG)))

    reply = await world.say("hugo", f"/publish {TAG}")

    prompt = reply.confirm
    assert prompt is not None and prompt.login_url is not None
    assert f"Signing: {len(paths)} files python.org lists have no signature yet" in reply.text
    assert "as hugo@python.org via https://github.com/login/oauth" in reply.text
    assert reply.text.splitlines()[-1].endswith(f"{prompt.line} <login>")
    link = urlsplit(prompt.login_url)
    assert f"{link.scheme}://{link.netloc}{link.path}" == as_rm.issuer_url + "/auth"
    query = parse_qs(link.query)
    assert query["code_challenge_method"] == ["S256"] and query["client_id"] == ["sigstore"]
    assert query["redirect_uri"] == ["urn:ietf:wg:oauth:2.0:oob"]
    planned_event = world.store.events(ReleaseTag.parse(TAG))[-1]
    assert planned_event.kind is EventKind.PLANNED
    assert sorted(planned_event.data["sign"]) == sorted(paths)
    assert planned_event.data["signer"] == list(RM)


async def test_the_verifier_is_never_journaled_logged_or_shown(
    tmp_path: Path, as_rm: SigstoreInstance, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    world = instance_world(tmp_path, as_rm)
    prompt = await planned(world)
    gate = world.gate._services
    offer = gate.store.release(ReleaseTag.parse(TAG)).offer
    assert offer is not None
    pending = gate.logins.pending(ReleaseTag.parse(TAG), offer.code_hash)
    assert pending is not None
    verifier = pending.pkce.verifier
    login = log_in(prompt.login_url or "")
    await world.say("hugo", prompt.with_login(login))

    journal = json.dumps([e.data for e in world.store.events(ReleaseTag.parse(TAG))])
    assert verifier not in journal and login not in journal
    assert verifier not in caplog.text and login not in caplog.text
    assert not any(verifier in m.text or login in m.text for m in world.chat.posts)


async def test_a_wrong_identity_is_refused_before_anything_moves_and_the_code_stays_valid(
    tmp_path: Path, as_rm: SigstoreInstance, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.service.gate")
    world = instance_world(tmp_path, as_rm)
    prompt = await planned(world)
    staged = world.staged_files(TAG)
    as_rm.login_as = MALLORY
    login = log_in(prompt.login_url or "")

    refused = await world.say("hugo", prompt.with_login(login))

    assert refused.private
    # A refusal is one log line (never an event), without the codes.
    [logged] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("refused")]
    assert f"/publish {TAG} confirm <code> <login>" in logged
    assert login not in caplog.text and prompt.code not in caplog.text
    assert login not in json.dumps([e.data for e in world.store.events(ReleaseTag.parse(TAG))])
    assert refused.text.startswith(
        "That login is mallory@example.org via https://github.com/login/oauth; 3.14 is "
        "signed by hugo@python.org via https://github.com/login/oauth. Nothing was published"
    )
    assert world.public_files() == set() and world.staged_files(TAG) == staged
    assert "confirmed" not in world.events(TAG)
    # The RM logs in again, as themself, with the same link; the same code confirms.
    as_rm.login_as = RM
    done = await world.say("hugo", prompt.with_login(log_in(prompt.login_url or "")))
    assert done.text.startswith(f"Published {TAG}:"), done.text


async def test_a_replayed_login_code_is_refused_and_nothing_is_public(
    tmp_path: Path, as_rm: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, as_rm)
    prompt = await planned(world)
    as_rm.login_as = MALLORY
    login = log_in(prompt.login_url or "")
    await world.say("hugo", prompt.with_login(login))  # the exchange spent the code
    as_rm.login_as = RM

    replayed = await world.say("hugo", prompt.with_login(login))

    assert replayed.private
    assert replayed.text.startswith("The login service refused that login code")
    assert login not in replayed.text
    assert world.public_files() == set()
    assert "confirmed" not in world.events(TAG)


async def test_an_expired_login_code_is_refused_and_nothing_is_public(
    tmp_path: Path, as_rm: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, as_rm)
    prompt = await planned(world)
    login = log_in(prompt.login_url or "")
    as_rm.expire_login_codes()

    refused = await world.say("hugo", prompt.with_login(login))

    assert refused.private and "has expired" in refused.text, refused.text
    assert world.public_files() == set() and "confirmed" not in world.events(TAG)


async def test_a_login_code_for_another_plan_s_link_is_refused(
    tmp_path: Path, as_rm: SigstoreInstance
) -> None:
    """PKCE: a code shown for one login link cannot be traded with another's verifier."""
    world = instance_world(tmp_path, as_rm)
    first = await planned(world)
    stolen = log_in(first.login_url or "")
    second = await world.say("hugo", f"/publish {TAG}")  # a newer plan, a new login
    assert second.confirm is not None

    refused = await world.say("hugo", second.confirm.with_login(stolen))

    assert refused.private and refused.text.startswith("The login service refused")
    assert "the code_verifier does not match the challenge" in as_rm.refusals[-1]
    assert world.public_files() == set()


async def test_a_confirmation_without_its_login_is_refused_and_the_code_stays_valid(
    tmp_path: Path, as_rm: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, as_rm)
    prompt = await planned(world)

    refused = await world.say("hugo", prompt.line)

    assert refused.private
    assert "open the plan's login link, log in, and type" in refused.text
    assert prompt.code not in refused.text
    done = await world.say("hugo", prompt.with_login(log_in(prompt.login_url or "")))
    assert done.text.startswith(f"Published {TAG}:")


async def test_a_restart_forgets_the_login_and_asks_for_a_new_plan(
    tmp_path: Path, as_rm: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, as_rm)
    prompt = await planned(world)
    login = log_in(prompt.login_url or "")
    world.start()  # the bot restarts: the verifier was only in its memory

    refused = await world.say("hugo", prompt.with_login(login))

    assert refused.private
    assert refused.text == (
        f"The login of this plan is gone (the bot restarted since /publish {TAG}); "
        f"type /publish {TAG} for a new plan and login link."
    )
    assert world.public_files() == set()


@pytest.mark.parametrize("rekor_version", [1, 2], ids=["rekor-v1", "rekor-v2"])
async def test_the_log_going_down_mid_signing_calls_the_publish_off_and_nothing_is_public(
    tmp_path: Path, rekor_version: int
) -> None:
    with SigstoreInstance(rekor_version) as instance:
        world = instance_world(tmp_path, instance)
        prompt = await planned(world)
        staged = {p: (world.staging / TAG / p).read_bytes() for p in world.staged_files(TAG)}
        login = log_in(prompt.login_url or "")
        instance.stop_log_after(3)  # the log takes three entries, then really goes down

        called_off = await world.say("hugo", prompt.with_login(login))

        assert not instance.log_is_up
        assert called_off.private
        assert called_off.text.startswith(
            f"Publishing {TAG} was called off before anything became public: signing failed"
        )
        assert world.public_files() == set()
        after = {p: (world.staging / TAG / p).read_bytes() for p in world.staged_files(TAG)}
        assert after == staged  # back in staging as they were, no signature left behind
        notices = [n for n in world.chat.texts(ChannelKind.NOTICE) if "called off" in n]
        assert len(notices) == 1 and "signing failed" in notices[0]
        assert world.events(TAG)[-1] == "aborted"
        await world.gate.scan()  # the next scans do not say it again
        assert len([n for n in world.chat.texts(ChannelKind.NOTICE) if "called off" in n]) == 1

        # The log is back: the RM asks for a new plan and login, and confirms again.
        instance.start_log()
        again = await world.say("hugo", f"/publish {TAG}")
        assert again.confirm is not None and again.confirm.login_url is not None
        done = await world.say("hugo", again.confirm.with_login(log_in(again.confirm.login_url)))
        assert done.text.startswith(f"Published {TAG}:"), done.text


async def test_a_publish_stopped_after_signing_resumes_without_another_login(
    tmp_path: Path, as_rm: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, as_rm)
    prompt = await planned(world)
    blocker = world.public / TAG  # a file where the public folder should be: promotion stops
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("in the way")

    stopped = await world.say("hugo", prompt.with_login(log_in(prompt.login_url or "")))

    assert stopped.text.startswith(f"Publishing {TAG} did not finish"), stopped.text
    assert world.events(TAG, EventKind.SIGNED) == ["signed"]
    world.start()  # even across a restart: the signatures are in the journaled plan
    blocker.unlink()
    issued = as_rm.certificates_issued
    await world.gate.resume()
    assert world.store.release(ReleaseTag.parse(TAG)).is_published
    assert as_rm.certificates_issued == issued  # not signed a second time
    assert f"{TAG}/Python-3.14.1.tgz.sigstore" in world.public_files()


async def test_files_signed_in_a_terminal_need_no_login_at_the_confirmation(
    tmp_path: Path,
    as_rm: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bot.cli import main

    world = instance_world(tmp_path, as_rm)
    world.stage(TAG)
    await world.ready_all(TAG)
    monkeypatch.setenv("SIGSTORE_IDENTITY_TOKEN", as_rm.token(*RM))
    assert main(["sign", TAG, "--config", str(tmp_path / "relbot.toml")]) == 0
    capsys.readouterr()

    reply = await world.say("hugo", f"/publish {TAG}")

    assert reply.confirm is not None and reply.confirm.login_url is None
    assert "Signing:" not in reply.text
    done = await world.say("hugo", reply.confirm.line)
    assert done.text.startswith(f"Published {TAG}:")
    assert world.events(TAG, EventKind.SIGNED) == []


async def test_with_signatures_opted_out_the_plan_says_so_and_asks_no_login(
    tmp_path: Path, as_rm: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, as_rm, require=False)
    world.stage(TAG)
    await world.ready_all(TAG)

    reply = await world.say("hugo", f"/publish {TAG}")

    assert reply.confirm is not None and reply.confirm.login_url is None
    assert f"Signatures: not required for {TAG} ([signatures] require = false)." in reply.text
    done = await world.say("hugo", reply.confirm.line)
    assert done.text.startswith(f"Published {TAG}:")
    assert not any(p.endswith(".sigstore") for p in world.public_files())


def test_relbot_check_warns_when_the_config_opts_out(
    tmp_path: Path, as_rm: SigstoreInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main

    instance_world(tmp_path, as_rm, require=False)
    (tmp_path / "data" / "staging").mkdir(parents=True, exist_ok=True)
    (tmp_path / "data" / "public").mkdir(parents=True, exist_ok=True)

    code = main(["check", "--offline", "--config", str(tmp_path / "relbot.toml")])

    out = capsys.readouterr().out
    assert code == 0, out
    assert (
        "relbot check: warning: signatures.require = false: releases are published without "
        "Sigstore signatures (the cpython profile requires them from 3.10 on)"
    ) in out


def test_relbot_check_is_quiet_about_signatures_when_they_are_required(
    tmp_path: Path, as_rm: SigstoreInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main

    instance_world(tmp_path, as_rm)
    (tmp_path / "data" / "staging").mkdir(parents=True, exist_ok=True)
    (tmp_path / "data" / "public").mkdir(parents=True, exist_ok=True)

    main(["check", "--offline", "--config", str(tmp_path / "relbot.toml")])

    assert "warning" not in capsys.readouterr().out


async def test_a_confirmation_without_the_login_is_refused_as_a_rule_and_the_code_stays_valid(
    tmp_path: Path, as_rm: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, as_rm)
    prompt = await planned(world)
    to_sign = len(signed_paths(world, world.staged_files(TAG)))

    refused = await world.say("hugo", prompt.line)  # the code alone, no login

    assert refused.private
    assert refused.text == (
        f"This plan signs {to_sign} files at the confirmation: open the plan's login link, log "
        f"in, and type /publish {TAG} confirm <code> <login> with the code the page shows."
    )
    # The RM may publish: what is missing is the login, not the right to (the operator's
    # dashboard counts it with the other rules, not as someone acting out of turn).
    assert world.gate.metrics.refusals == {"rule": 1}
    assert "confirmed" not in world.events(TAG)
    done = await world.say("hugo", prompt.with_login(log_in(prompt.login_url or "")))
    assert done.text.startswith(f"Published {TAG}"), done.text
