"""The shape the README's "How it is built" draws, checked on the source, for every module of
``bot/`` and ``adapters/``: each sits in one layer of :data:`LAYERS` and imports (at any level,
lazy and type-checking imports included) only from its own layer or those below; no import
circle; no private name of another module imported or reached; no module over 400 lines nor
class over 250 without saying why. Besides: the domain does no I/O, the service layer knows
the world only through the ports, ``bot/app.py`` is the one place that names the concrete
adapters, and no chat SDK is imported under ``bot/``."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAT_SDKS = ("discord", "slack_bolt", "slack_sdk", "aiohttp")
IO_LIBRARIES = ("httpx", "paramiko", "sigstore", "sqlite3", "socket", "requests")

# The layers, lowest first: a module imports only from its own layer or a lower one.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # what everything shares: errors, logging, retries, reading a file, the HTTP client,
    # the metrics and the chat channel's health they report
    (
        "basics",
        (
            "bot",  # the package itself: its version
            "bot.errors",
            "bot.logs",
            "bot.backoff",
            "bot.regular_files",
            "bot.http_client",
            "bot.channel_health",
            "bot.metrics",
        ),
    ),
    ("domain", ("bot.domain",)),  # the pure rules
    ("config", ("bot.config", "bot.team")),  # the config file, and the team it names
    ("ports", ("bot.ports",)),  # the interfaces the service layer needs from the world
    # the I/O implementations, by the outside system they talk to
    ("I/O", ("bot.storage", "bot.journal", "bot.pydotorg", "bot.signing")),
    ("service", ("bot.service",)),  # the gate and what it is made of
    # what drives the gate or reads it from outside: the web server, the poll's clock
    ("drivers", ("bot.web", "bot.scheduler")),
    ("adapters", ("adapters",)),  # the chat platforms
    # what builds and runs it all
    (
        "composition",
        ("bot.app", "bot.cli", "bot.serving", "bot.preflight", "bot.demo", "bot.wait"),
    ),
]
# The I/O layer, which the service layer never names: it gets what it needs through ports.
CONCRETE = (*dict(LAYERS)["I/O"], "bot.http_client")
# Honest exceptions to "the service layer names no I/O module", each with its reason.
SERVICE_IO_EXCEPTIONS = {
    # Signing at the confirmation: the login's halves (a PKCE verifier kept in memory between
    # /publish and the confirmation) and Sigstore's signer are used directly; they want a
    # signing port in Connections, which is not written yet.
    "bot.signing.login",
    "bot.signing.signer",
}


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
    gate = ROOT / "bot" / "service" / "gate.py"
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


@pytest.mark.parametrize("path", modules("bot/service"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_service_layer_knows_the_world_through_ports_only(path: Path) -> None:
    bad = [
        name
        for name in imports(path)
        if within(name, CONCRETE + IO_LIBRARIES + CHAT_SDKS + ("adapters",))
        and name not in SERVICE_IO_EXCEPTIONS
    ]
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_the_service_layer_exceptions_are_still_needed() -> None:
    """An exception nobody needs any more is taken off the list."""
    used = {name for path in modules("bot/service") for name in imports(path)}
    assert set(SERVICE_IO_EXCEPTIONS) <= used


@pytest.mark.parametrize("path", modules("bot"), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_composition_root_names_the_adapters(path: Path) -> None:
    if path == ROOT / "bot" / "app.py":
        return
    assert not [n for n in imports(path) if within(n, ("adapters",))], path


@pytest.mark.parametrize("path", modules("bot"), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_chat_sdk_under_bot(path: Path) -> None:
    sdks = [n for n in imports(path) if within(n, ("discord", "slack_bolt", "slack_sdk"))]
    assert not sdks, f"{path.relative_to(ROOT)} imports {sdks}"


@pytest.mark.parametrize("path", modules("adapters"), ids=lambda p: str(p.relative_to(ROOT)))
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


# -- the shape of a package: circles, private names, sizes ----------------------------------

# The packages these rules hold for.
SHAPED = ("bot", "adapters")
MAX_MODULE_LINES = 400  # past these, the docstring says why: "over 400 lines because …"
MAX_CLASS_LINES = 250  # likewise for a class: "over 250 lines because …"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def shaped_modules() -> dict[str, Path]:
    return {module_name(p): p for package in SHAPED for p in modules(package)}


def imported_names(path: Path) -> Iterator[tuple[str, str | None]]:
    """``(module, name)`` for every import in ``path`` (``name`` None for ``import module``),
    at any level; a relative import comes out with a leading ``.``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            yield from ((module, alias.name) for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    """Module → the modules of ``SHAPED`` it imports (``from package import module`` counts
    as importing that module)."""
    known = shaped_modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for module, imported in imported_names(path):
            target = f"{module}.{imported}" if f"{module}.{imported}" in known else module
            if target in known and target != name:
                graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each group of modules that import one another, directly or not (Tarjan's strongly
    connected components with more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while (top := stack.pop()) != node:
                group.append(top)
            group.append(node)
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_sees_the_adapters() -> None:
    graph = import_graph()
    assert "adapters.slack.blocks" in graph["adapters.slack.platform"]
    assert "adapters.platform" in graph["adapters.discord.channel"]


def test_no_import_circle_between_modules() -> None:
    assert circles(import_graph()) == []


def layer_of(module: str, layers: list[tuple[str, tuple[str, ...]]] = LAYERS) -> int | None:
    """The index in ``layers`` of the layer ``module`` belongs to (None: none, or more than
    one). An entry names a package and everything under it, except a package with entries of
    its own under it (``bot``): that names only the package's ``__init__``."""
    entries = [package for _, packages in layers for package in packages]
    found = [
        i
        for i, (_, packages) in enumerate(layers)
        for package in packages
        if module == package
        or (
            module.startswith(package + ".")
            and not any(e.startswith(package + ".") for e in entries)
        )
    ]
    return found[0] if len(found) == 1 else None


def upward_imports(
    graph: Mapping[str, set[str]], layers: list[tuple[str, tuple[str, ...]]] = LAYERS
) -> list[str]:
    """Each import of a module from a higher layer than its own, as ``a (layer) -> b
    (layer)``."""
    found = []
    for module in sorted(graph):
        low = layer_of(module, layers)
        for target in sorted(graph[module]):
            high = layer_of(target, layers)
            if low is not None and high is not None and high > low:
                found.append(f"{module} ({layers[low][0]}) -> {target} ({layers[high][0]})")
    return found


def test_the_layer_rule_sees_an_upward_import() -> None:
    layers = [("low", ("pkg.base",)), ("high", ("pkg.top", "pkg"))]
    graph = {"pkg": set(), "pkg.base.a": {"pkg.top"}, "pkg.top": {"pkg.base.a", "pkg"}}
    assert upward_imports(graph, layers) == ["pkg.base.a (low) -> pkg.top (high)"]
    assert layer_of("pkg.other", layers) is None  # "pkg" is the package itself only


def test_the_layer_rule_sees_a_lazy_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from bot.app import build_gate\n")
    assert [m for m, _ in imported_names(source)] == ["bot.app"]


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in import_graph() if layer_of(m) is None]
    assert not unplaced, f"add these to one layer of LAYERS: {unplaced}"


def test_no_module_imports_from_a_higher_layer() -> None:
    graph = import_graph()
    assert "bot.service.gate" in graph["adapters.platform"]  # the graph sees bot too
    assert upward_imports(graph) == []


@pytest.mark.parametrize("path", shaped_modules().values(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_relative_import(path: Path) -> None:
    """Absolute imports only: ``import discord`` in ``adapters/discord/`` is discord.py."""
    relative = [m for m, _ in imported_names(path) if m.startswith(".")]
    assert not relative, f"{path.relative_to(ROOT)} imports {relative}"


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(path: Path) -> list[str]:
    """What ``path`` imports from another module of ``SHAPED`` that is private there: a name
    or a module that starts with ``_``."""
    return [
        f"{module}.{name}" if name else module
        for module, name in imported_names(path)
        if within(module, SHAPED)
        and (private(name or "") or any(private(part) for part in module.split(".")))
    ]


def test_the_private_name_rule_sees_private_names(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from adapters.slack.blocks import _fit, section\n"
        "from adapters._hidden import shown\n"
        "import adapters.platform\n"
        "from os import _exit\n"
        "def f():\n    from bot.storage.sftp_fs import _link\n"
    )
    assert private_imports(source) == [
        "adapters.slack.blocks._fit",
        "adapters._hidden.shown",
        "bot.storage.sftp_fs._link",
    ]


@pytest.mark.parametrize("path", shaped_modules().values(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_name_imported_from_another_module(path: Path) -> None:
    bad = private_imports(path)
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


# paramiko has no public call for OpenSSH's hardlink extension nor for a listing that keeps
# names that are not UTF-8: those uses of its internals are said where they are made.
LIBRARY_INTERNALS = {"sftp._request", "sftp._adjust_cwd", "attributes._from_msg"}


def reached_privates(path: Path) -> list[str]:
    """The private attributes ``path`` reaches on anything but ``self`` and ``cls`` (another
    module's object: ``storage._lstat(...)``) or ``other`` (another instance of the same
    class, in a comparison), as ``line: attribute``."""
    return [
        f"{node.lineno}: {node.attr}"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
        and private(node.attr)
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls", "other"))
        and ast.unparse(node) not in LIBRARY_INTERNALS
    ]


def test_the_private_attribute_rule_sees_a_reach(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "self._own = 1\nstorage._lstat(conn)\nself._client._http.close()\n"
        "other._key < self._key\nsftp._request(1)\n"
    )
    assert reached_privates(source) == ["2: _lstat", "3: _http"]


@pytest.mark.parametrize("path", shaped_modules().values(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_attribute_reached_from_outside(path: Path) -> None:
    bad = reached_privates(path)
    assert not bad, f"{path.relative_to(ROOT)} reaches {bad}"


def unexplained(lines: int, limit: int, docstring: str | None) -> bool:
    """Longer than ``limit`` lines, and the docstring does not say why ("over N lines
    because …")."""
    return lines > limit and f"over {limit} lines because" not in (docstring or "").lower()


def test_the_length_rule_counts_and_reads_the_reason() -> None:
    assert unexplained(401, MAX_MODULE_LINES, "The module.")
    assert not unexplained(400, MAX_MODULE_LINES, None)
    assert not unexplained(401, MAX_MODULE_LINES, "Over 400 lines because it is a table.")


@pytest.mark.parametrize("path", shaped_modules().values(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_nor_class_too_long_without_a_reason(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    long = []
    if unexplained(len(text.splitlines()), MAX_MODULE_LINES, ast.get_docstring(tree)):
        long.append(f"the module: {len(text.splitlines())} lines")
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
            lines = node.end_lineno - node.lineno + 1
            if unexplained(lines, MAX_CLASS_LINES, ast.get_docstring(node)):
                long.append(f"class {node.name}: {lines} lines")
    assert not long, f"{path.relative_to(ROOT)}: {long}"


def test_the_slack_manifest_needs_no_sdk() -> None:
    """``relbot slack-manifest`` imports ``adapters.slack.commands`` (and the packages around
    it), and no chat SDK may come with it."""
    graph = import_graph()
    reached, todo = set(), ["adapters", "adapters.slack", "adapters.slack.commands"]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo += graph[module]
    paths = shaped_modules()
    sdks = [
        (module, name)
        for module in sorted(reached)
        for name in imports(paths[module])
        if within(name, CHAT_SDKS)
    ]
    assert not sdks, sdks
