"""The shape the README's "How it is built" draws, checked on the source: the domain does no
I/O, the gate knows the world only through ports, ``bot/app.py`` is the one place that names
the concrete adapters, and no chat SDK is imported under ``bot/``."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAT_SDKS = ("discord", "slack_bolt", "slack_sdk", "aiohttp")
IO_LIBRARIES = ("httpx", "paramiko", "sigstore", "sqlite3", "socket", "requests")
# The concrete I/O implementations: storage backends, state, python.org, CDN, Sigstore.
CONCRETE = (
    "bot.state",
    "bot.storage.local",
    "bot.storage.sftp",
    "bot.registry",
    "bot.cdn",
    "bot.http_client",
    "bot.signatures",
    "bot.signing",
    "bot.downloads_check",
    "bot.release_page",
    "bot.discourse",
)


def imports(path: Path) -> Iterator[str]:
    """Every module ``path`` imports, at any level (lazy imports included)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module


def within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_the_checks_see_the_code() -> None:
    gate = ROOT / "bot" / "gate.py"
    assert "bot.ports" in set(imports(gate))  # a walker that found nothing would pass below
    assert len(modules("bot/domain")) > 10


@pytest.mark.parametrize("path", modules("bot/domain"), ids=lambda p: p.name)
def test_the_domain_does_no_io(path: Path) -> None:
    bad = [
        name
        for name in imports(path)
        if within(name, IO_LIBRARIES + CHAT_SDKS + ("bot", "adapters"))
        and not within(name, ("bot.domain", "bot.errors"))
    ]
    assert not bad, f"{path.name} imports {bad}"


# The service layer: the gate and the collaborators it is made of.
SERVICE_LAYER = [
    ROOT / "bot" / name
    for name in (
        "gate.py",
        "services.py",
        "observer.py",
        "pipeline.py",
        "reporter.py",
        "connections.py",
        "refusals.py",
        "announcing.py",
    )
] + modules("bot/handlers")


@pytest.mark.parametrize("path", SERVICE_LAYER, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_service_layer_knows_the_world_through_ports_only(path: Path) -> None:
    bad = [
        name
        for name in imports(path)
        if within(name, CONCRETE + IO_LIBRARIES + CHAT_SDKS + ("adapters",))
    ]
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


@pytest.mark.parametrize("path", modules("bot"), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_composition_root_names_the_adapters(path: Path) -> None:
    if path == ROOT / "bot" / "app.py":
        return
    assert not [n for n in imports(path) if within(n, ("adapters",))], path


@pytest.mark.parametrize("path", modules("bot"), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_chat_sdk_under_bot(path: Path) -> None:
    sdks = [n for n in imports(path) if within(n, ("discord", "slack_bolt", "slack_sdk"))]
    assert not sdks, f"{path.relative_to(ROOT)} imports {sdks}"


@pytest.mark.parametrize("path", modules("adapters"), ids=lambda p: p.name)
def test_the_platforms_reach_no_further_than_the_gate(path: Path) -> None:
    """A platform talks to the gate's public methods, never to what the gate is built on."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    reached = [
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr
        in (
            "store",
            "storage",
            "registry",
            "purger",
            "verifier",
            "downloads",
            "release_page",
            "forum",
        )
        and isinstance(node.value, ast.Name)
        and node.value.id == "gate"
    ]
    assert not reached, f"{path.name} reaches gate.{reached}"
    assert not [n for n in imports(path) if within(n, CONCRETE)], path
