"""An identity token that has expired is called expired, at the confirmation, never
"malformed or missing claims" (what sigstore says of any token it cannot decode)."""

from __future__ import annotations

import functools
import urllib.request
from pathlib import Path

import pytest

from bot.ports.messages import ChannelKind
from bot.signing.login import token_problem
from tests.signing_fixtures import RM, instance_world, sigstore_instance
from tests.sigstore_instance import SigstoreInstance

__all__ = ["sigstore_instance"]

TAG = "3.14.1"


def log_in(link: str) -> str:
    """What the RM does in a browser: open the link, log in, read the code shown."""
    with urllib.request.urlopen(link, timeout=10) as page:
        return str(page.read().decode()).strip()


async def test_an_expired_identity_token_is_called_expired_and_nothing_is_public(
    tmp_path: Path, sigstore_instance: SigstoreInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    sigstore_instance.login_as = RM
    world = instance_world(tmp_path, sigstore_instance)
    world.stage(TAG)
    await world.ready_all(TAG)
    plan = await world.say("hugo", f"/publish {TAG}")
    assert plan.confirm is not None and plan.confirm.login_url is not None, plan.text
    # The login page hands out a token that expired a minute ago (a slow login, a skewed clock).
    expired = functools.partial(sigstore_instance.token, lifetime=-60)
    monkeypatch.setattr(sigstore_instance, "token", expired)
    login = log_in(plan.confirm.login_url)

    refused = await world.say("hugo", plan.confirm.with_login(login))

    assert refused.private
    assert refused.text.startswith("The identity token of that login has expired (at "), (
        refused.text
    )
    assert "malformed" not in refused.text
    assert "Log in again and confirm with the new code." in refused.text
    assert world.public_files() == set() and "confirmed" not in world.events(TAG)
    told = [m.text for m in world.chat.posts if m.kind is ChannelKind.NOTICE]
    assert not [text for text in told if "token" in text or "login" in text], told  # RM only


def test_a_token_that_is_not_a_jwt_is_not_called_expired() -> None:
    reason = "Identity token is malformed or missing claims"
    for raw in ("", "not.a.token", "a.b", "x." + "e30" + ".y"):  # e30: {} (no exp)
        assert token_problem(raw, reason) == f"is not usable ({reason})"


def test_a_token_still_valid_is_not_called_expired(sigstore_instance: SigstoreInstance) -> None:
    raw = sigstore_instance.token(*RM)
    assert token_problem(raw, "wrong audience") == "is not usable (wrong audience)"
    old = sigstore_instance.token(*RM, lifetime=-60)
    assert token_problem(old, "whatever").startswith("has expired (at ")
