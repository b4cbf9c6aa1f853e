"""Every package says in its ``__init__`` docstring what it may import ("it may import the
basics, ``bot.domain`` and ``bot.ports``, nothing above them"), and the statement is true:
each module of the package imports, of relbot, only its own package and what the statement
names. Read from the sentence after "may import", up to the first "nothing", "never",
"only" or ";":

- ``bot.x`` / ``adapters.x`` in backticks (``:mod:`` too): that module or package;
- "the basics": the lowest layer of tests/test_architecture.py's ``LAYERS``;
- "everything below it" / "everything below the LAYER": every layer lower than the
  package's own, or than LAYER (a layer's name in ``LAYERS``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.test_architecture import LAYERS, ROOT, imported_names, layer_of, module_name, within

PENDING: dict[str, str] = {}  # package → its statement, while its __init__ does not say it
RELBOT = ("bot", "adapters")
NAME = re.compile(r"`{1,2}~?((?:bot|adapters)(?:\.\w+)*)`")
BELOW = re.compile(r"(?:everything|every layer) below (?:it\b|them\b|the ([\w/]+))")
STOP = re.compile(r"\b(?:nothing|never|only)\b|;|\.(?:\s|$)")


@dataclass(frozen=True)
class Statement:
    modules: frozenset[str]  # modules and packages named
    layers: frozenset[int]  # whole layers, by index in LAYERS

    def allows(self, module: str) -> bool:
        # "bot" in the basics is the package's own __init__, not everything under it.
        if module == "bot" or any(within(module, (m,)) for m in self.modules if m != "bot"):
            return True
        return layer_of(module) in self.layers


def packages() -> list[str]:
    """``bot``, ``adapters`` and every package right under them."""
    inits = [ROOT / p / "__init__.py" for p in RELBOT]
    inits += sorted(p for top in RELBOT for p in (ROOT / top).glob("*/__init__.py"))
    return [module_name(p) for p in inits]


def docstring(package: str) -> str:
    path = ROOT / Path(*package.split(".")) / "__init__.py"
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def statement_text(package: str) -> str | None:
    """The words after "may import" in ``package``'s docstring (or its pending statement)."""
    text = " ".join(docstring(package).split())
    at = text.find("may import")
    if at < 0:
        pending = PENDING.get(package)
        return pending[pending.find("may import") :] if pending else None
    return text[at:]


def parse(package: str, text: str) -> Statement:
    words = text.removeprefix("may import")
    stop = STOP.search(words)
    words = words[: stop.start()] if stop else words
    own = layer_of(package)
    layer_names = [name for name, _ in LAYERS]
    layers = set()
    if "the basics" in words:
        layers.add(0)
    for match in BELOW.finditer(words):
        if match.group(1) is None:
            assert own is not None, f"{package} has no layer to be below"
            top = own
        else:
            assert match.group(1) in layer_names, f"{package}: no layer {match.group(1)!r}"
            top = layer_names.index(match.group(1))
        layers |= set(range(top))
    return Statement(frozenset(NAME.findall(words)), frozenset(layers))


def governed(package: str) -> list[Path]:
    """The modules ``package``'s statement speaks for: the ``bot`` package's own
    ``__init__`` (its modules each have a layer of their own), else every module under it."""
    folder = ROOT / Path(*package.split("."))
    if package == "bot":
        return [folder / "__init__.py"]
    if package == "adapters":  # the platforms' packages have statements of their own
        return sorted(folder.glob("*.py"))
    return sorted(folder.rglob("*.py"))


def breaches(package: str, statement: Statement, paths: list[Path]) -> list[str]:
    """Each import of relbot by ``paths`` that the statement does not allow."""
    found = []
    for path in paths:
        for module, name in imported_names(path):
            target = f"{module}.{name}" if name and is_module(f"{module}.{name}") else module
            if not within(target, RELBOT) or (within(target, (package,)) and package != "bot"):
                continue
            if not statement.allows(target):
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
                found.append(f"{where} imports {target}")
    return found


def is_module(name: str) -> bool:
    """Whether ``name`` is a module or package of relbot (``from bot import errors``)."""
    path = ROOT / Path(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_the_statements_are_found_for_every_package() -> None:
    found = packages()
    assert {"bot", "adapters", "bot.domain", "bot.service", "adapters.slack"} <= set(found)


@pytest.mark.parametrize("package", packages())
def test_each_package_says_what_it_may_import_and_keeps_to_it(package: str) -> None:
    text = statement_text(package)
    assert text is not None, f"{package}'s __init__ docstring does not say what it may import"
    bad = breaches(package, parse(package, text), governed(package))
    assert not bad, f"{package} says {text[:160]!r}, but: {bad}"


def test_the_statement_reader_reads_names_layers_and_where_it_stops() -> None:
    said = parse(
        "bot.pydotorg",
        "may import the basics, ``bot.config``, :mod:`bot.domain` and :mod:`bot.ports`, "
        "nothing above them such as ``bot.service``.",
    )
    assert said.modules == {"bot.config", "bot.domain", "bot.ports"}
    assert said.layers == {0}
    assert said.allows("bot.errors") and said.allows("bot.domain.tags")
    assert not said.allows("bot.service.gate") and not said.allows("bot.journal.store")
    web = parse("bot.web", "may import everything below it, never the composition.")
    assert web.allows("bot.service.gate") and not web.allows("bot.app")
    wait = parse("bot.wait", "may import ``bot.app`` and everything below the adapters.")
    assert wait.allows("bot.app") and wait.allows("bot.web.board")
    assert not wait.allows("adapters.console")


def test_an_import_the_statement_does_not_name_is_found(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from bot.domain import tags\nfrom bot.service.gate import Gate\n")
    said = parse("bot.ports", "may import the basics and :mod:`bot.domain` only.")
    assert breaches("bot.ports", said, [module]) == ["m.py imports bot.service.gate"]
