"""The tidy over SFTP, as the server's own commands: one shell script per batch that goes
down staging one folder at a time, ``cd`` by a relative name, and checks the folder it is
now in (``stat -c %d:%i .``) against both the entry it entered (``lstat``: a link is never
the folder it points to) and the identity the freeze recorded, before any relative ``rm``.
The working folder is the folder so held: a later swap of its path (one
``renameat2(RENAME_EXCHANGE)`` with a link to public) cannot redirect a removal. The same
walk gives the freeze the folders' identities."""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping, Sequence

from bot.errors import StorageError
from bot.storage.local_tidy import Tree
from bot.storage.primitives import Stamp
from bot.storage.remote_copy import STAMP
from bot.storage.ssh import Connection, SshLink, batches, first_line

# into NAME [ID]: enter folder NAME of the working folder, never through a link: the folder
# entered must be the entry lstat saw (and, given, the recorded identity).
# rmf NAME STAMP INDEX: remove NAME here if its stamp is still STAMP; one line out.
# refuse REL INDEX...: the files below a folder not entered (gone, or not the recorded one).
# rmd NAME ID: remove folder NAME here if it is still ID and empty; silent.
_FUNCTIONS = f"""export LC_ALL=C
into() {{
  g=; [ -e "$1" ] || [ -L "$1" ] || {{ g=1; return 1; }}
  [ -d "$1" ] && [ ! -L "$1" ] || return 1
  a=$(stat -c %d:%i -- "$1") && cd -P -- "$1" && [ "$(stat -c %d:%i .)" = "$a" ] || return 1
  [ $# -lt 2 ] || [ "$a" = "$2" ]
}}
rmf() {{
  s=$({{ [ -f "$1" ] && [ ! -L "$1" ] && stat -c '{STAMP}' -- "$1"; }} 2>/dev/null) || s=-
  if [ "$s" = - ]; then
    if [ -e "$1" ] || [ -L "$1" ]; then echo "$3 changed"; else echo "$3 gone"; fi
  elif [ "$s" != "$2" ]; then echo "$3 changed"
  elif e=$(rm -f -- "$1" 2>&1); then echo "$3 gone"
  else e=$(printf %s "$e" | head -n 1); echo "$3 error ${{e##*: }}"  # rm's reason only
  fi
}}
refuse() {{ w="folder $1"; [ -z "$g" ] || w=gone; shift; for i; do echo "$i $w"; done; }}
rmd() {{ [ "$(stat -c %d:%i -- "$1" 2>/dev/null)" = "$2" ] && rmdir -- "$1" 2>/dev/null; :; }}
"""


def folder_ids(
    link: SshLink, conn: Connection, root: str, folders: Sequence[str]
) -> dict[str, str]:
    """See :meth:`bot.storage.primitives.FileSystem.folder_ids`: one command."""
    q = shlex.quote
    lines = [_FUNCTIONS]
    for folder in folders:
        steps = " && ".join(f"into {q(part)}" for part in folder.split("/") if part)
        lines.append(
            f"( cd -P -- {q(root)} && {steps or ':'} && stat -c %d:%i . ) 2>/dev/null || echo -"
        )
    status, out, err = link.exec(conn, "\n".join(lines))
    got = out.decode(errors="replace").splitlines()
    if status != 0 or len(got) != len(folders):
        why = first_line(err) or "unexpected output"
        raise StorageError(f"Cannot look at staging on {link.where}: {why}.")
    return {f: line for f, line in zip(folders, got, strict=True) if line != "-"}


def remove_staged(
    link: SshLink,
    conn: Connection,
    root: str,
    files: Mapping[str, Stamp],
    folders: Mapping[str, str],
) -> dict[str, str]:
    """See :meth:`bot.storage.primitives.FileSystem.remove_staged`: one command per batch
    of files, the emptied folders removed by the last one."""
    paths = sorted(files)
    left: dict[str, str] = {}
    # A folder's path is repeated in each batch that holds one of its files.
    split = list(batches(paths, lambda path: 2 * len(path) + 200))
    for n, batch in enumerate(split):
        script = _script(root, batch, files, folders, prune=n == len(split) - 1)
        status, out, err = link.exec(conn, script)
        got = out.decode(errors="replace").splitlines()
        if status != 0 or len(got) != len(batch):
            why = first_line(err) or "unexpected output"
            raise StorageError(f"Cannot tidy staging on {link.where}: {why}.")
        for line in got:
            index, _, rest = line.partition(" ")
            what, _, detail = rest.partition(" ")
            path = batch[int(index)]
            if what == "changed":
                left[path] = "changed"
            elif what == "folder":
                left[path] = f"folder {detail}"
            elif what == "error":
                left[path] = f"error {detail}"
    return left


def _script(
    root: str, batch: list[str], files: Mapping[str, Stamp], folders: Mapping[str, str], prune: bool
) -> str:
    """The walk as nested subshells: each folder entered in a subshell of its parent's, so a
    folder refused leaves the parent's working folder as it was. One line out per file of
    ``batch``: its index, then ``gone``, ``changed``, ``folder REL`` or ``error WHY``."""
    q = shlex.quote
    index = {path: i for i, path in enumerate(batch)}

    def block(here: str, node: Tree) -> list[str]:
        lines = [
            f"rmf {q(name)} {q(_stamp(files[p]))} {index[p]}" for name, p in node.files.items()
        ]
        for name, inner in node.folders.items():
            relative = posixpath.join(here, name)
            known = folders.get(relative, "-")
            refused = " ".join(str(index[p]) for p in inner.paths())
            lines.append(
                f"( into {q(name)} {q(known)} || {{ refuse {q(relative)} {refused}; exit 0; }}"
            )
            lines += block(relative, inner)
            lines.append(")")
            if prune:
                lines.append(f"rmd {q(name)} {q(known)}")
        return lines

    # staging itself is the configured root, entered as the config names it
    return "\n".join([_FUNCTIONS, f"cd -P -- {q(root)} || exit 1", *block("", Tree.of(batch))])


def _stamp(stamp: Stamp) -> str:
    """The stamp as ``stat -c STAMP`` prints it (nanoseconds as seconds.fraction)."""

    def seconds(ns: int | None) -> str:
        return "-" if ns is None else f"{ns // 10**9}.{ns % 10**9:09d}"

    ino = "-" if stamp.ino is None else str(stamp.ino)
    return f"{ino}|{stamp.size}|{seconds(stamp.mtime_ns)}|{seconds(stamp.ctime_ns)}"
