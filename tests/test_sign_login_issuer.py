"""The signer is an address *and* the OIDC issuer that vouched for it: a login with the branch
signer's address through another issuer is refused at the confirmation, before anything is
journaled or frozen, and the plan's code stays valid (the real signer, against the private
Sigstore instance of tests/sigstore_instance)."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from tests.signing_fixtures import RM, instance_world, sigstore_instance
from tests.sigstore_instance import SigstoreInstance

__all__ = ["sigstore_instance"]

TAG = "3.14.1"
# The branch signer's own address, vouched for by another provider than the profile names.
SAME_ADDRESS_OTHER_ISSUER = (RM[0], "https://accounts.google.com")


def log_in(link: str) -> str:
    """What the RM does in a browser: open the link, log in, read the code shown."""
    with urllib.request.urlopen(link, timeout=10) as page:
        return str(page.read().decode()).strip()


@pytest.fixture
def instance(sigstore_instance: SigstoreInstance) -> Iterator[SigstoreInstance]:
    """The session's instance, its login page put back to the 3.14 signer afterwards."""
    yield sigstore_instance
    sigstore_instance.login_as = RM


async def test_the_signer_s_address_through_another_issuer_is_refused_and_the_code_stays_valid(
    tmp_path: Path, instance: SigstoreInstance
) -> None:
    world = instance_world(tmp_path, instance)
    world.stage(TAG)
    await world.ready_all(TAG)
    reply = await world.say("hugo", f"/publish {TAG}")
    prompt = reply.confirm
    assert prompt is not None and prompt.login_url is not None, reply.text
    staged = world.staged_files(TAG)
    instance.login_as = SAME_ADDRESS_OTHER_ISSUER

    refused = await world.say("hugo", prompt.with_login(log_in(prompt.login_url)))

    assert refused.private
    assert refused.text.startswith(
        "That login is hugo@python.org via https://accounts.google.com; 3.14 is signed by "
        "hugo@python.org via https://github.com/login/oauth. Nothing was published"
    ), refused.text
    assert world.events(TAG, EventKind.CONFIRMED) == []  # nothing pinned, nothing frozen
    assert world.public_files() == set() and world.staged_files(TAG) == staged
    assert world.events(TAG, EventKind.SIGNED) == []
    # The RM logs in again through the right provider; the plan's own code confirms.
    instance.login_as = RM
    done = await world.say("hugo", prompt.with_login(log_in(prompt.login_url)))
    assert done.text.startswith(f"Published {TAG}:"), done.text
