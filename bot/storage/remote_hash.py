"""SHA-256 digests of server files, computed on the server: ``sha256sum`` batches run by
parallel processes over one exec channel (a download when exec is not allowed), and a cache
of digests keyed by the (size, mtime) the latest listing reported.
"""

from __future__ import annotations

import hashlib
import posixpath
import shlex
import stat
from collections.abc import Iterable, Sequence

from bot.domain.files import SPARSE_FROM, SPARSE_RATIO
from bot.errors import SparseFile, StorageError
from bot.storage.ssh import MAX_COMMAND, Connection, SshLink, first_line

Stamp = tuple[int, int]  # (size, mtime in whole seconds): what SFTP v3 reports

_HASH_PROCESSES = 4  # parallel sha256sum processes on the server for one batch of files
HASH_SECONDS = 900  # the longest one sha256sum process may take (a FIFO swapped in hangs)


class RemoteHasher:
    """Hashes server paths over ``link``, remembering each digest with the stamp it was
    computed at; callers hold ``link.lock`` (``cached``, ``remember``) or run in a call."""

    def __init__(self, link: SshLink) -> None:
        self.link = link
        self._stamps: dict[str, Stamp] = {}  # path -> stamp from the latest listing
        self._digests: dict[str, tuple[Stamp, str]] = {}  # path -> (stamp hashed, sha256)

    def cached(self, path: str) -> str | None:
        stamp, hit = self._stamps.get(path), self._digests.get(path)
        return hit[1] if stamp is not None and hit is not None and hit[0] == stamp else None

    def hash(
        self,
        conn: Connection,
        paths: Sequence[str],
        *,
        below: str | None = None,
    ) -> dict[str, str]:
        """SHA-256 of server paths, read afresh: hashed by the server, else downloaded (the
        cache is only written here; :meth:`cached` is the caller's to consult). With
        ``below``, a path reached through a symbolic link below that folder (one swapped in
        since the listing) is refused as not a regular file."""
        result: dict[str, str] = {}
        todo = list(dict.fromkeys(paths))
        if not todo:
            return result
        if self.link.exec_allowed(conn):
            for chunk in chunks(todo):
                result.update(self._on_server(conn, chunk, below))
        else:
            for path in todo:
                if below is not None and linked_between(conn, below, path):
                    raise StorageError(
                        f"Cannot hash {path} on {self.link.where}: not a regular file."
                    )
                result[path] = self._by_download(conn, path)
        return result

    def _on_server(
        self, conn: Connection, paths: list[str], below: str | None = None
    ) -> dict[str, str]:
        """``sha256sum -z`` (NUL-terminated, names unescaped) between two ``stat``s: a
        digest is cached only when the file did not change while it was read. Several files
        are hashed by parallel ``sha256sum`` processes (a release's big installers then take
        the time of the biggest, not of all), their outputs joined in order."""
        q = shlex.quote
        self.link.requests["hash"] += 1
        groups = [paths[i::_HASH_PROCESSES] for i in range(min(_HASH_PROCESSES, len(paths)))]
        paths = [p for group in groups for p in group]  # the order of the joined outputs
        quoted = " ".join(q(p) for p in paths)
        stamps = f"stat --printf '%s %Y\\0' -- {quoted}"
        # Only regular files are read: ``find -P`` names anything else (a symbolic link to
        # /etc/passwd or /dev/zero, a FIFO) without following it, and nothing is hashed.
        # What is swapped in after that look is cut short by ``timeout``.
        regular = (
            f"{{ odd=$(find -P {quoted} -prune ! -type f -print) && "
            '{ [ -z "$odd" ] || { printf \'not a regular file: %s\\n\' "$odd" >&2; exit 3; }; }; }'
        )
        # A sparse file (a 100 GB ``truncate``) is never read: the server's stat tells.
        regular += (
            f" && for p in {quoted}; do set -- $(stat -c '%s %b %B' -- \"$p\"); "
            f'if [ "$1" -ge {SPARSE_FROM} ] && [ $(($2 * $3 * {SPARSE_RATIO})) -lt "$1" ]; '
            'then printf \'sparse: %s %s %s\\n\' "$1" $(($2 * $3)) "$p" >&2; exit 4; fi; done'
        )
        if below is not None:  # and no folder on the way is a link: each resolves in place
            regular += (
                f' && {{ root={q(below)}; r=$(cd -P -- "$root" && pwd -P) || exit 3; '
                f"for p in {quoted}; do d=${{p%/*}}; "
                'case $(cd -P -- "$d" 2>/dev/null && pwd -P) in "$r${d#"$root"}") ;; '
                "*) printf 'not a regular file: %s\\n' \"$p\" >&2; exit 3;; esac; done; }"
            )
        sha256sum = f"timeout -k 5 {HASH_SECONDS} sha256sum -z --"
        if len(groups) == 1:
            hashing = f"{sha256sum} {quoted}"
        else:
            jobs = [
                f'{sha256sum} {" ".join(q(p) for p in g)} >"$t/{i}" & p{i}=$!'
                for i, g in enumerate(groups)
            ]
            waits = " && ".join(f"wait $p{i}" for i in range(len(groups)))
            outputs = " ".join(f'"$t/{i}"' for i in range(len(groups)))
            hashing = (
                "{ t=$(mktemp -d) || exit 1; trap 'rm -rf \"$t\"' EXIT; "
                + "; ".join(jobs)
                + f"; {waits} && cat {outputs}; }}"
            )
        status, out, err = self.link.exec(conn, f"{regular} && {stamps} && {hashing} && {stamps}")
        records = out.split(b"\0")
        n = len(paths)
        if status == 4 and err.startswith(b"sparse: "):
            size, allocated, path = (
                err[8:].rstrip(b"\n").decode(errors="surrogateescape").split(" ", 2)
            )
            raise SparseFile(path, int(size), int(allocated))
        if status != 0 or len(records) != 3 * n + 1:
            raise StorageError(
                f"Cannot hash on {self.link.where}: {first_line(err) or 'no output'}."
            )
        result = {}
        for i, path in enumerate(paths):
            line = records[n + i]
            digest, name = line[:64].decode("ascii", "replace"), line[66:]
            if name != path.encode("utf-8", "surrogateescape") or not _is_hex(digest):
                raise StorageError(f"Unexpected sha256sum output on {self.link.where} for {path}.")
            result[path] = digest
            before, after = _stamp(records[i]), _stamp(records[2 * n + i])
            if before is not None and before == after:
                self._digests[path] = (before, digest)
        return result

    def _by_download(self, conn: Connection, path: str) -> str:
        self.link.requests["download"] += 1
        try:
            # Never through a symbolic link, never a FIFO (the server's open would block).
            if not stat.S_ISREG(conn.sftp.lstat(path).st_mode or 0):
                raise StorageError(f"Cannot hash {path} on {self.link.where}: not a regular file.")
            with conn.sftp.open(path, "rb") as f:
                before = f.stat()
                if not stat.S_ISREG(before.st_mode or 0):
                    raise StorageError(
                        f"Cannot hash {path} on {self.link.where}: not a regular file."
                    )
                f.prefetch(before.st_size)
                h = hashlib.sha256()
                while chunk := f.read(1 << 20):
                    h.update(chunk)
                after = f.stat()
        except FileNotFoundError:
            raise StorageError(f"Cannot hash {path} on {self.link.where}: it is gone.") from None
        digest = h.hexdigest()
        stamp = (before.st_size or 0, before.st_mtime or 0)
        if stamp == (after.st_size or 0, after.st_mtime or 0):
            self._digests[path] = (stamp, digest)
        return digest

    def remember(self, root: str, stamps: dict[str, Stamp]) -> None:
        """Keep the latest listing's stamps under ``root`` (and forget gone files)."""
        prefix = root + "/"
        for cache in (self._stamps, self._digests):
            for path in [p for p in cache if p.startswith(prefix) and p not in stamps]:
                del cache[path]
        self._stamps.update(stamps)

    # -- exec ------------------------------------------------------------------------------


def linked_between(conn: Connection, below: str, path: str) -> bool:
    """Whether a folder between ``below`` and ``path`` is a symbolic link (the server
    resolves the folder elsewhere than where it is named): two round trips."""
    folder = posixpath.dirname(path)
    return bool(conn.sftp.normalize(folder) != conn.sftp.normalize(below) + folder[len(below) :])


def chunks(paths: list[str]) -> Iterable[list[str]]:
    """Split paths so each hashing command stays well below the argument limit."""
    chunk: list[str] = []
    size = 0
    for path in paths:
        # Each path appears five times: two checks, two stamps and the hashing.
        if chunk and size + 3 * len(path) > MAX_COMMAND // 2:
            yield chunk
            chunk, size = [], 0
        chunk.append(path)
        size += 3 * len(path) + 16
    if chunk:
        yield chunk


def _stamp(record: bytes) -> Stamp | None:
    try:
        size, mtime = record.split()
        return int(size), int(mtime)
    except ValueError:
        return None


def _is_hex(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)
