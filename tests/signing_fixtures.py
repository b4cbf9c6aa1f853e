"""Fixtures for signing tests: the private Sigstore instance and worlds configured to use it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag
from tests.conftest import World
from tests.sigstore_instance import SigstoreInstance

RM = ("hugo@python.org", "https://github.com/login/oauth")  # the 3.14 signer of the profile
SIGNED_WITH_INSTANCE = """
    [signatures]
    require = {require}
    trusted_root = "trust/{trust_file}"
"""


@pytest.fixture(scope="session")
def sigstore_instance() -> Iterator[SigstoreInstance]:
    with SigstoreInstance() as instance:
        yield instance


@pytest.fixture
def signing_instance(
    sigstore_instance: SigstoreInstance, request: pytest.FixtureRequest
) -> Iterator[SigstoreInstance]:
    """The session's instance signing to the Rekor version a test is parametrised with
    (:data:`both_rekors`), v1 otherwise; put back to v1 after the test."""
    sigstore_instance.rekor_version = getattr(request, "param", 1)
    yield sigstore_instance
    sigstore_instance.rekor_version = 1


#: Run a test that uses ``signing_instance`` twice: signing to Rekor v1 (the log dates the
#: signature), then to Rekor v2 with the timestamp authority (as the public-good instance).
both_rekors = pytest.mark.parametrize(
    "signing_instance", [1, 2], indirect=True, ids=["rekor-v1", "rekor-v2"]
)


def instance_world(
    tmp_path: Path,
    instance: SigstoreInstance,
    *,
    require: bool = True,
    team_toml: str | None = None,
) -> World:
    """A team whose ``[signatures] trusted_root`` is the instance's client trust config."""
    (tmp_path / "trust").mkdir(exist_ok=True)
    instance.write_trust_config(tmp_path / "trust" / "instance.json")
    toml = SIGNED_WITH_INSTANCE.format(require=str(require).lower(), trust_file="instance.json")
    if team_toml is None:
        return World(tmp_path, toml)
    return World(tmp_path, toml, team_toml=team_toml)


def signed_paths(world: World, staged: Iterable[str], tag: str = "3.14.1") -> list[str]:
    """The staged files whose signature the gate checks (docs and the like are unsigned)."""
    release = ReleaseTag.parse(tag)
    return [p for p in staged if world.profile.needs_signature(release, p)]


def signed_files(profile: Profile, release: Path, staged: list[Path]) -> list[Path]:
    """Of files staged in the ``release`` folder, those whose signature the gate checks."""
    tag = ReleaseTag.parse(release.name)
    return [f for f in staged if profile.needs_signature(tag, f.relative_to(release).as_posix())]
