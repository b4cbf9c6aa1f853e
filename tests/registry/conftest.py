"""What every registry test shares: the CPython profile, retries that record their waits
instead of sleeping, and python.org itself (the double, or its own app) behind a proxy."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.domain.profile import Profile, load_profile
from tests.doubles.pydotorg import PydotorgDouble
from tests.pythondotorg_app import (
    INTERN_KEY,
    INTERN_TOKEN,
    RM_KEY,
    RM_TOKEN,
    PythonOrgApp,
    pythondotorg_app,
)
from tests.registry.answer_dropper import AnswerDropper
from tests.registry.python_org import PythonOrg, on_app, on_double
from tests.registry.test_registry import Sleeps

__all__ = ["pythondotorg_app"]  # the session fixture, for the tests of this folder


@pytest.fixture
def profile() -> Profile:
    return load_profile("cpython")


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture(params=["double", "real"])
def pydotorg(request: pytest.FixtureRequest) -> Iterator[PythonOrg]:
    """python.org as relbot's double and as python.org's own app (a fresh database each
    test), each behind an :class:`AnswerDropper`."""
    if request.param == "real":
        app: PythonOrgApp = request.getfixturevalue("pythondotorg_app")
        app.reset()
        with AnswerDropper(app.base_url) as proxy:
            yield on_app(app, proxy)
        return
    users = {"rm": (RM_KEY, True), "intern": (INTERN_KEY, False)}
    tokens = {"rm": (RM_TOKEN, True), "intern": (INTERN_TOKEN, False)}
    with (
        PydotorgDouble(users=users, tokens=tokens) as double,
        AnswerDropper(double.base_url) as proxy,
    ):
        yield on_double(double, proxy)
