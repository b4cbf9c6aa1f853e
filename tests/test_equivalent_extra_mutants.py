"""The list of equivalent extra mutants (bench/equivalent_extra_mutants.toml, for
bench/extra_mutants.py) stays true to the code: each entry names a function that exists, a kind
the script makes and a line the function still has, and says why. An entry left behind by a
change would otherwise excuse a mutant of code that no longer exists."""

from __future__ import annotations

import importlib
import inspect
import tomllib
from pathlib import Path
from typing import Any

import pytest

LISTED: list[dict[str, str]] = tomllib.loads(
    (Path(__file__).parent.parent / "bench" / "equivalent_extra_mutants.toml").read_text("utf-8")
)["equivalent"]
KINDS = {"drop-operand", "force-true", "force-false", "pass"}


def source_of(function: str) -> str:
    """The source of ``bot.mod.func`` or ``bot.mod.Class.method`` (a nested function: the
    function around it), its lines stripped and joined as the list writes them."""
    parts = function.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # the longest importable module
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            inner = inspect.getattr_static(found, name, None)
            if inner is None:
                break  # a function defined inside the one found
            found = inner
        break
    else:
        raise AssertionError(f"no module for {function}")
    if isinstance(found, property):
        found = found.fget
    return " ".join(line.strip() for line in inspect.getsource(found).splitlines())


@pytest.mark.parametrize(
    "entry", LISTED, ids=[f"{e['function'].rsplit('.', 1)[1]}: {e['new'][:40]}" for e in LISTED]
)
def test_each_equivalent_extra_mutant_is_of_a_line_the_code_still_has(
    entry: dict[str, str],
) -> None:
    assert entry["kind"] in KINDS
    assert entry["old"].strip() in source_of(entry["function"])
    assert entry["new"].strip() != entry["old"].strip()
    assert entry["why"].strip()


def test_no_extra_mutant_is_listed_twice() -> None:
    keys = [(e["function"], e["kind"], e["old"].strip(), e["new"].strip()) for e in LISTED]
    assert len(keys) == len(set(keys))
