"""Fixtures for signing tests: the private Sigstore instance and worlds configured to use it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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
