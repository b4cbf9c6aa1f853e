"""The list of equivalent mutants (bench/equivalent_mutants.toml) stays true to the code: each
entry names a function that exists and a line that is still in it, and says why. An entry left
behind by a change would otherwise excuse a mutant of code that no longer exists, or hide
that the new code's mutant has no reason written down."""

from __future__ import annotations

import importlib
import inspect
import tomllib
from pathlib import Path
from typing import Any

import pytest

LISTED: list[dict[str, str]] = tomllib.loads(
    (Path(__file__).parent.parent / "bench" / "equivalent_mutants.toml").read_text("utf-8")
)["equivalent"]


def source_of(mutmut_name: str) -> str:
    """The source of the function mutmut names ``bot.mod.x_func`` or
    ``bot.mod.xǁClassǁmethod``, its lines stripped and joined as the list writes them."""
    module_name, _, name = mutmut_name.partition(".x")
    found: Any = importlib.import_module(module_name)
    path = name.split("ǁ")[1:] if name.startswith("ǁ") else [name.removeprefix("_")]
    for part in path:
        found = inspect.getattr_static(found, part)
    return " ".join(line.strip() for line in inspect.getsource(found).splitlines())


@pytest.mark.parametrize(
    "entry", LISTED, ids=[f"{e['function'].rsplit('.', 1)[1]}: {e['new'][:40]}" for e in LISTED]
)
def test_each_equivalent_mutant_is_of_a_line_the_code_still_has(entry: dict[str, str]) -> None:
    assert entry["old"].strip() in source_of(entry["function"])
    assert entry["new"].strip() != entry["old"].strip()
    assert entry["why"].strip()


def test_no_mutant_is_listed_twice() -> None:
    keys = [(e["function"], e["old"].strip(), e["new"].strip()) for e in LISTED]
    assert len(keys) == len(set(keys))
