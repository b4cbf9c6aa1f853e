"""Every open release's staging tree in ONE command on the server (a scan's look), where the
server runs the bot's commands: one GNU ``find -P`` per release folder, its output cut on
the server at the walk's entry budget (``head -z``) and read no further than that by the
bot. What it prints is only the raw listing, folder by folder: the judging (odd names,
depth, empty and unreadable folders, the budget) is :func:`bot.storage.walk.walk`'s, run
over it as over any backend's listings, so the one-command look and the folder-by-folder
one cannot drift (bot/storage/sftp_files.py).

Each entry is three NUL-terminated records, ``TYPE MODE UID SIZE BLOCKS MTIME LINKS DEPTH
FLAG``, the path below the release folder and the link target (empty but for a link): a
name holds no NUL, so no name (a newline, spaces, bytes that are not UTF-8) can forge a
record, and the records are read by position, never by content. Anything the bot cannot
take as such (a ``find`` that failed on some folder, a release cut at the budget, output it
does not expect) leaves that release, or every release, to the folder-by-folder walk.
"""

from __future__ import annotations

import errno
import shlex
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.storage import walk as walk_module
from bot.storage.ssh import Connection, SshLink
from bot.storage.walk import Dirent

# find's %y letters, as the type bits of a mode (a door, an unknown type: neither)
_TYPES = {
    b"f": stat.S_IFREG,
    b"d": stat.S_IFDIR,
    b"l": stat.S_IFLNK,
    b"p": stat.S_IFIFO,
    b"s": stat.S_IFSOCK,
    b"c": stat.S_IFCHR,
    b"b": stat.S_IFBLK,
}
_HEADER = "%y %m %U %s %b %T@ %n %d"
_ENTRY_BYTES = 1024  # what the bot reads per entry of the budget, at most (paths included)


@dataclass
class Tree:
    """One release folder as the server listed it. ``kind``: ``tree`` (``folders`` holds
    each folder's entries, by path below the release folder, "" its top; ``closed`` the
    folders that cannot be listed), ``absent`` (no such folder), ``link`` (the release
    folder is a symbolic link to ``target``) or ``unreadable`` (it cannot be listed)."""

    kind: str
    target: str = ""
    folders: dict[str, list[Dirent]] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)

    def listdir(self, folder: str, limit: int) -> list[Dirent]:
        """The walk's ``listdir`` over this listing (``folder`` below the release, "" its
        top; the walk names them from its root ``.``: ``./docs``): at most ``limit``
        entries; a closed folder raises ``PermissionError`` with the words SFTP has for it."""
        folder = "" if folder == "." else folder.removeprefix("./")
        if folder in self.closed:
            raise PermissionError(errno.EACCES, "Permission denied")
        if folder not in self.folders:
            raise FileNotFoundError(errno.ENOENT, "No such file", folder)
        return self.folders[folder][:limit]


def command(staging: str, names: Sequence[str]) -> str:
    """The shell command listing ``names`` (release folders in ``staging``) with their
    trees: per name a record ``+`` and its entries, ended by ``= STATUS`` (find's exit
    status) unless cut at the budget, or a record ``0`` when nothing is there. A folder the
    bot cannot list is printed with the flag ``u`` and not entered (``-prune``): find then
    names no error for it."""
    q = shlex.quote
    limit = walk_module.MAX_ENTRIES  # the module's budgets, read at each look
    depth = walk_module.MAX_DEPTH + 1  # the entries of the deepest folder the walk enters
    records = 3 * (limit + 2)  # the folder itself, and one entry past the budget
    entry = f"{_HEADER} FLAG\\0%P\\0%l\\0"
    closed, listed = entry.replace("FLAG", "u"), entry.replace("FLAG", "-")
    find = (
        f'find -P "./$d" -maxdepth {depth} '
        f"\\( -type d ! \\( -readable -executable \\) -printf '{closed}' -prune \\) "
        f"-o -printf '{listed}'"
    )
    return (
        f"export LC_ALL=C; cd -- {q(staging)} || exit 3; "
        f"for d in {' '.join(q(n) for n in names)}; do "
        'if [ -L "$d" ] || [ -e "$d" ]; then '
        f"printf '+\\0'; {{ {find}; printf '= %s\\0' \"$?\"; }} | head -z -n {records}; "
        "else printf '0\\0'; fi; done"
    )


def output_limit(names: Sequence[str]) -> int:
    """The most bytes of output the bot reads for ``names``."""
    return len(names) * (walk_module.MAX_ENTRIES + 2) * _ENTRY_BYTES


def list_trees(
    link: SshLink, conn: Connection, staging: str, names: Sequence[str]
) -> dict[str, Tree] | None:
    """The trees of the release folders ``names`` in ``staging``, by name, from one command
    on the server; a name missing from the answer is one the bot must walk folder by folder
    (cut at the budget, a folder that vanished or failed while it was listed). None when
    the command failed or its output is not what the bot expects (past the limit, say)."""
    status, out, _err = link.exec(conn, command(staging, names), limit=output_limit(names))
    if status != 0:  # past the limit too (PAST_LIMIT)
        return None
    try:
        return parse(out, names)
    except ValueError:
        return None


def parse(out: bytes, names: Sequence[str]) -> dict[str, Tree]:
    """The answer of :func:`command`; ``ValueError`` when it is not of that form."""
    records = out.split(b"\0")
    if records.pop() != b"":
        raise ValueError("output not ended by a NUL")
    found: dict[str, Tree] = {}
    i = 0
    for name in names:
        marker = records[i] if i < len(records) else b""
        i += 1
        if marker == b"0":
            found[name] = Tree("absent")
            continue
        if marker != b"+":
            raise ValueError(f"no record for {name}")
        tree, complete = Tree("tree"), False
        first = True
        while i < len(records) and records[i] not in (b"+", b"0"):
            if records[i].startswith(b"= "):
                complete = records[i] == b"= 0"
                i += 1
                break
            if i + 3 > len(records):
                raise ValueError("an entry cut short")
            header, path, target = records[i : i + 3]
            i += 3
            _entry(tree, header, path, target, first=first)
            first = False
        if first:  # not even the folder itself: it went away meanwhile
            continue
        if complete or tree.kind != "tree":
            found[name] = tree
    if i != len(records):
        raise ValueError("more records than releases")
    return found


def _entry(tree: Tree, header: bytes, path: bytes, target: bytes, *, first: bool) -> None:
    """Add one entry (``first``: the release folder itself) to ``tree``."""
    fields = header.split(b" ")
    if len(fields) != 9:
        raise ValueError(f"not an entry: {header!r}")
    kind, mode, uid, size, blocks, mtime, links, depth, flag = fields
    if not uid.isdigit():  # listed with the rest, though no listing keeps the owner
        raise ValueError(f"not an owner: {uid!r}")
    st_mode = _TYPES.get(kind, 0) | int(mode, 8)
    level = int(depth)
    name = path.decode("utf-8", "surrogateescape")
    if first:
        if level != 0 or name:
            raise ValueError("the release folder's own record is missing")
        if stat.S_ISLNK(st_mode):
            tree.kind, tree.target = "link", target.decode("utf-8", "surrogateescape") or "?"
        elif not stat.S_ISDIR(st_mode):  # a file named like a release: OpenSSH's listing
            tree.kind = "absent"  # of it says "No such file", and so the walk
        elif flag == b"u":
            tree.kind, tree.target = "unreadable", "Permission denied"
        else:
            tree.folders[""] = []
        return
    parent, _, base = name.rpartition("/")
    if level != name.count("/") + 1 or not base or parent not in tree.folders:
        raise ValueError(f"an entry out of place: {name!r}")
    whole = mtime.split(b".")[0]  # SFTP's attributes carry whole seconds: so does this
    tree.folders[parent].append(
        Dirent(base, st_mode, int(size), float(int(whole)), int(links), int(blocks) * 512)
    )
    if stat.S_ISDIR(st_mode):
        if flag == b"u":
            tree.closed.add(name)
        else:
            tree.folders[name] = []
