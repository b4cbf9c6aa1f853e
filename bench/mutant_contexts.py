"""A pytest plugin for bench/extra_mutants.py: which tests run each line of the mutated modules,
and how long each test takes.

Loaded with ``-p mutant_contexts`` (bench/ on PYTHONPATH) for the one clean run of a suite's
tests that precedes its mutants. coverage.py records each line under the node id of the test
running it (fixtures included: the context switches before the setup), and how long each test
takes. A subprocess a test starts (``relbot manifest``, say) records its lines too, under the
same test: COVERAGE_PROCESS_START names a configuration whose context is the variable this
plugin sets to the running test's node id (coverage's .pth hook starts it in each new Python
process of the virtualenv). Run it in one process (no ``-n``): an xdist worker would be started
by that hook too.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator
from pathlib import Path

import coverage
import pytest

# Set by bench/extra_mutants.py for this run only.
DATA = "EXTRA_MUTANTS_DATA"  # the coverage data file's base name (each process adds a suffix)
INCLUDE = "EXTRA_MUTANTS_INCLUDE"  # the mutated modules' files, os.pathsep-separated
TEST = "EXTRA_MUTANTS_TEST"  # set here: the running test, the context of its subprocesses

_state: dict[str, coverage.Coverage] = {}
_durations: dict[str, float] = {}


def pytest_configure(config: pytest.Config) -> None:
    include = os.environ[INCLUDE].split(os.pathsep)
    measure = coverage.Coverage(
        data_file=os.environ[DATA], data_suffix=True, include=include, config_file=False
    )
    measure.start()
    _state["coverage"] = measure
    # Only this process's children read it: this one has started already.
    rc = Path(os.environ[DATA]).with_name("subprocesses.coveragerc")
    lines = "".join(f"    {path}\n" for path in include)
    rc.write_text(
        f"[run]\ndata_file = {os.environ[DATA]}\nparallel = true\n"
        f"context = ${{{TEST}}}\ninclude =\n{lines}",
        encoding="utf-8",
    )
    os.environ["COVERAGE_PROCESS_START"] = str(rc)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    measure = _state.get("coverage")
    if measure is not None:
        measure.switch_context(item.nodeid)
    os.environ[TEST] = item.nodeid
    started = time.monotonic()
    yield
    _durations[item.nodeid] = time.monotonic() - started


def pytest_unconfigure(config: pytest.Config) -> None:
    measure = _state.pop("coverage", None)
    if measure is None:
        return
    measure.stop()
    measure.save()
    out = Path(os.environ[DATA]).with_name("durations.json")
    out.write_text(json.dumps(_durations), encoding="utf-8")
