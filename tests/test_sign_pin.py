"""The signer's dependencies, honestly declared: sigstore is pinned to the exact version whose
private error classes bot/signing/signer.py catches (an upgrade fails here until someone checks them
again), and every distribution that bot/ and adapters/ import is a declared dependency."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from bot.signing.signer import SIGSTORE_VERSION

ROOT = Path(__file__).resolve().parent.parent


def declared() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return list(project["dependencies"])


def name_of(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert found is not None, requirement
    return re.sub(r"[-_.]+", "-", found.group(0)).lower()


def test_sigstore_is_pinned_to_the_version_its_private_imports_were_checked_against() -> None:
    assert f"sigstore=={SIGSTORE_VERSION}" in declared()
    assert importlib.metadata.version("sigstore") == SIGSTORE_VERSION, (
        "sigstore was upgraded: check that sigstore._internal.fulcio.client.ExpiredCertificate, "
        "FulcioClientError and sigstore._internal.rekor.RekorClientError still are what its "
        "signer raises, then bump SIGSTORE_VERSION in bot/signing/signer.py and the pin in "
        "pyproject.toml."
    )


def test_the_private_names_bot_signing_catches_still_exist() -> None:
    from sigstore._internal.fulcio.client import ExpiredCertificate, FulcioClientError
    from sigstore._internal.rekor import RekorClientError

    assert all(
        issubclass(kind, Exception)
        for kind in (ExpiredCertificate, FulcioClientError, RekorClientError)
    )


def test_every_distribution_the_bot_imports_is_a_declared_dependency() -> None:
    providers = importlib.metadata.packages_distributions()
    wanted: dict[str, set[str]] = {}
    for folder in ("bot", "adapters"):
        for source in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top in ("bot", "adapters"):
                        continue
                    for distribution in providers.get(top, [top]):
                        wanted.setdefault(name_of(distribution), set()).add(str(source.name))
    names = {name_of(requirement) for requirement in declared()}
    missing = {d: sorted(files) for d, files in wanted.items() if d not in names}
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
