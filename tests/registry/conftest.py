"""What every registry test shares: the CPython profile, and retries that record their waits
instead of sleeping."""

from __future__ import annotations

import pytest

from bot.domain.profile import Profile, load_profile
from tests.registry.test_registry import Sleeps


@pytest.fixture
def profile() -> Profile:
    return load_profile("cpython")


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()
