"""The signer's dependencies, honestly declared: sigstore is a range (the installed version is
inside it), no module reaches into sigstore's private modules, its refusals are still told as
refusals by what they do (a CA that refuses the login, a log that answers with an error) and a
bug is not taken for one; every distribution that bot/ and adapters/ import is a declared
dependency."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from sigstore.oidc import IdentityToken

from bot.signing.signer import SigningError, load_signing_trust, sign_digests
from tests.doubles.server import LoopbackServer
from tests.signing_fixtures import RM, sigstore_instance
from tests.sigstore_instance import SigstoreInstance

__all__ = ["sigstore_instance"]

ROOT = Path(__file__).resolve().parent.parent
DIGEST = "ab" * 32  # a SHA-256, as the sign step hands it over


def declared() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return list(project["dependencies"])


def name_of(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert found is not None, requirement
    return re.sub(r"[-_.]+", "-", found.group(0)).lower()


def imported_modules(folder: str) -> Iterator[tuple[Path, str]]:
    """(file, module) for every absolute import of the project's ``folder``."""
    for source in (ROOT / folder).rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                yield from ((source, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                yield source, node.module
                # ``from sigstore import _internal`` names the module in the alias
                yield from ((source, f"{node.module}.{alias.name}") for alias in node.names)


def test_sigstore_is_declared_as_a_range_the_installed_version_is_inside() -> None:
    [sigstore] = [Requirement(r) for r in declared() if name_of(r) == "sigstore"]
    installed = importlib.metadata.version("sigstore")

    assert not any(s.operator in ("==", "===") for s in sigstore.specifier), sigstore
    assert sigstore.specifier.contains(installed), (
        f"sigstore {installed} is installed, outside the declared {sigstore.specifier}: run "
        "make lock (or make install)."
    )


def test_no_module_imports_sigstore_s_private_modules() -> None:
    private = sorted(
        f"{source.relative_to(ROOT)}: {module}"
        for folder in ("bot", "adapters", "tests", "bench")
        for source, module in imported_modules(folder)
        if module.startswith("sigstore._")
    )

    assert private == []


# -- its refusals, told by what they do ------------------------------------------------------


class RefusingLog(BaseHTTPRequestHandler):
    """A transparency log that is up but refuses every entry (an overloaded Rekor)."""

    def do_POST(self) -> None:
        data = json.dumps({"code": 503, "message": "the log is read-only for now"}).encode()
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # quiet in tests
        pass


def test_a_log_that_answers_with_an_error_fails_each_file_and_signs_nothing(
    tmp_path: Path, sigstore_instance: SigstoreInstance
) -> None:
    log = LoopbackServer(RefusingLog)
    try:
        config = sigstore_instance.trust_config()
        config["signingConfig"]["rekorTlogUrls"][0]["url"] = log.url.rstrip("/")
        trust_file = tmp_path / "trust.json"
        trust_file.write_text(json.dumps(config), encoding="utf-8")
        token = IdentityToken(sigstore_instance.token(*RM))

        bundles, failed = sign_digests(load_signing_trust(str(trust_file)), token, {"a": DIGEST})
    finally:
        log.stop()

    assert bundles == {}
    assert list(failed) == ["a"] and failed["a"].startswith("signing failed: "), failed


def test_a_ca_that_refuses_the_login_is_no_certificate(
    tmp_path: Path, sigstore_instance: SigstoreInstance
) -> None:
    trust = load_signing_trust(str(sigstore_instance.write_trust_config(tmp_path / "t.json")))
    with SigstoreInstance() as other:  # the same claims, signed by a key this CA does not know
        foreign = IdentityToken(other.token(*RM))

    with pytest.raises(SigningError, match=r"^no signing certificate \("):
        sign_digests(trust, foreign, {"a": DIGEST})


def test_a_bug_while_signing_is_raised_as_itself_not_taken_for_a_refusal(
    tmp_path: Path, sigstore_instance: SigstoreInstance
) -> None:
    trust = load_signing_trust(str(sigstore_instance.write_trust_config(tmp_path / "t.json")))
    token = IdentityToken(sigstore_instance.token(*RM))

    with pytest.raises(ValueError, match="non-hexadecimal"):
        sign_digests(trust, token, {"a": "not a digest"})


# -- every import declared -------------------------------------------------------------------


def test_every_distribution_the_bot_imports_is_a_declared_dependency() -> None:
    providers = importlib.metadata.packages_distributions()
    wanted: dict[str, set[str]] = {}
    for folder in ("bot", "adapters"):
        for source, module in imported_modules(folder):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top in ("bot", "adapters"):
                continue
            if (str(source.name), top) == ("cli.py", "tests"):
                # `relbot rehearse` runs from a clone, on the doubles in its tests/ folder, and
                # refuses in one sentence where they are absent (tests/test_rehearse.py).
                continue
            for distribution in providers.get(top, [top]):
                wanted.setdefault(name_of(distribution), set()).add(str(source.name))
    names = {name_of(requirement) for requirement in declared()}
    missing = {d: sorted(files) for d, files in wanted.items() if d not in names}
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
