"""Storage is written once: the algorithms (the freeze, the copy, the promotion, the work
area, the aside area, the lock) are written over one filesystem interface and import no
backend; the two backends implement it; no module of storage imports another in a circle,
and no module reaches into another's private names. Checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STORAGE = ROOT / "bot" / "storage"
ALGORITHMS = ("freezer", "promotion", "workarea", "aside", "lock")
BACKENDS = (
    *("local", "local_fs", "sftp", "sftp_fs", "sftp_files", "sftp_check", "ssh"),
    *("remote_stat", "sftp_small", "sftp_stream"),  # parts of sftp_fs, by concern
    "remote_list",  # a scan's one command, for sftp_files
)
# paramiko has no public call for OpenSSH's hardlink extension nor for a listing that keeps
# names that are not UTF-8: those two uses of its internals are said where they are made.
PARAMIKO_INTERNALS = {"sftp._request", "sftp._adjust_cwd", "attributes._from_msg"}


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def storage_imports(path: Path) -> set[str]:
    """The storage modules ``path`` imports, at any level (TYPE_CHECKING ones included)."""
    found = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "bot.storage":
                found |= {alias.name for alias in node.names}
            elif node.module.startswith("bot.storage."):
                found.add(node.module.removeprefix("bot.storage.").split(".")[0])
        elif isinstance(node, ast.Import):
            found |= {
                a.name.removeprefix("bot.storage.")
                for a in node.names
                if a.name.startswith("bot.storage.")
            }
    return found


def test_the_storage_modules_import_each_other_without_a_circle() -> None:
    graph = {p.stem: storage_imports(p) for p in STORAGE.glob("*.py") if p.stem != "__init__"}
    assert len(graph) > 10 and graph["local"]  # the walker sees the imports

    def cycle_from(start: str) -> list[str] | None:
        path: list[str] = []

        def visit(name: str) -> list[str] | None:
            if name in path:
                return [*path[path.index(name) :], name]
            path.append(name)
            for nxt in sorted(graph.get(name, ())):
                if (found := visit(nxt)) is not None:
                    return found
            path.pop()
            return None

        return visit(start)

    cycles = [c for name in sorted(graph) if (c := cycle_from(name)) is not None]
    assert not cycles, f"import circles in bot/storage: {cycles[0]}"


FILE_CALLS = {"open", "rename", "replace", "link", "unlink", "remove", "mkdir", "rmdir"}
FILE_CALLS |= {"scandir", "listdir", "stat", "lstat", "chmod", "makedirs", "fsync"}


def test_the_algorithms_are_written_over_the_interface_and_import_no_backend() -> None:
    for name in ALGORITHMS:
        path = STORAGE / f"{name}.py"
        backends = storage_imports(path) & set(BACKENDS)
        libraries = {
            (alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
            for node in ast.walk(tree(path))
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        } & {"paramiko", "shutil", "fcntl"}
        file_calls = [
            ast.unparse(node)
            for node in ast.walk(tree(path))
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and node.attr in FILE_CALLS
        ]
        assert not backends and not libraries and not file_calls, (
            f"{name}.py reaches files around the interface: {backends, libraries, file_calls}"
        )


def test_no_module_reaches_into_another_modules_private_names() -> None:
    reached = []
    for path in sorted((ROOT / "bot").rglob("*.py")):
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bot"):
                reached += [
                    f"{path.name}: import {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                # its own, or another instance of its class in a comparison
                and not (
                    isinstance(node.value, ast.Name) and node.value.id in ("self", "cls", "other")
                )
                and ast.unparse(node) not in PARAMIKO_INTERNALS
            ):
                reached.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not reached, reached
