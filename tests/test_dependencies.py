"""Every distribution the code imports is declared in pyproject.toml: what the package imports
among its dependencies, what the tests and benchmarks import among those or the test extras.
An import that works only because another package happened to pull it in breaks the day that
package stops."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
OWN = {"bot", "adapters", "tests", "bench"}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(*extras: str) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    return {normalized(re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0]) for r in requirements}


def imported(*folders: str) -> dict[str, set[str]]:
    """Top-level module → the files that import it, third-party modules only."""
    found: dict[str, set[str]] = {}
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in OWN:
                        found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


@pytest.mark.parametrize(
    ("folders", "extras"),
    [(("bot", "adapters"), ()), (("tests", "bench"), ("test", "mutation"))],
    ids=["package", "tests"],
)
def test_every_imported_distribution_is_declared(
    folders: tuple[str, ...], extras: tuple[str, ...]
) -> None:
    modules = imported(*folders)
    assert "httpx" in modules  # the walk found the imports
    owners = packages_distributions()
    allowed = declared(*extras)
    undeclared = {
        module: sorted(files)
        for module, files in modules.items()
        if not any(normalized(d) in allowed for d in owners.get(module, [module]))
    }
    assert not undeclared, f"declare in pyproject.toml: {undeclared}"
