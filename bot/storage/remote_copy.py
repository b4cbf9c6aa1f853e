"""The bot's copies of staged files, made on the server: one shell command per batch, the
files shared among parallel processes, each file copied (``cp --reflink=auto``: a reflink or
an in-kernel copy, never a read through the network), hashed from the copy, made durable and
read-only, and renamed into place only when its bytes are the confirmed ones.

Each file is copied from a descriptor, never from its path: a small shell opens the staged
file once (``exec 3<``), checks the file it opened (``stat -L /dev/fd/3``) is a regular file
with the inode the ``lstat`` before saw, and only then runs ``cp`` on ``/dev/fd/3`` (which
reopens that very file: a reflink or an in-kernel copy still). A folder, a link or a FIFO
swapped in for the staged name costs no copy (nothing is written to the work folder), and an
open that blocks (a FIFO with no writer) is given up after :data:`OPEN_SECONDS`.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from bot.errors import StorageError
from bot.storage.primitives import Copied, CopyJob, Stamp
from bot.storage.ssh import Connection, SshLink, batches, first_line

PROCESSES = 4  # files copied and hashed at once on the server
OPEN_SECONDS = 3  # how long opening a staged file may block (only a FIFO does)
STAMP = "%i|%s|%.9Y|%.9Z"  # inode, size, mtime and ctime in nanoseconds

# The copier: $1 source, $2 target, $3 the inode lstat saw. Exit 3: the file it opened is not
# that regular file. A blocked open dies of timeout's USR1 (exit 138); once open, USR1 is
# ignored (by cp too, through exec), so a long copy is never cut short.
_COPIER = """exec 3<"$1"
trap '' USR1
m=$(stat -L -c %f:%i /dev/fd/3) || exit 2
[ $(( 0x${m%%:*} & 0170000 )) -eq $(( 0100000 )) ] && [ "${m#*:}" = "$3" ] || exit 3
exec cp --reflink=auto --no-preserve=all -- /dev/fd/3 "$2"
"""

# $1 index, $2 source, $3 target, $4 expected SHA-256; one line out: "INDEX WHAT ...". The
# copy's write-back to disk starts as soon as it is made (sync -d in the background) and
# runs while it is hashed; it is waited for before the copy gets its name.
_ONE = f"""one() {{
  if [ -L "$2" ] || [ ! -f "$2" ]; then
    if [ -e "$2" ] || [ -L "$2" ]; then echo "$1 odd"; else echo "$1 missing"; fi; return
  fi
  b=$(stat -c '{STAMP}' -- "$2" 2>/dev/null) || {{ echo "$1 missing"; return; }}
  t="$3.part"
  if [ -e "$t" ] || [ -L "$t" ]; then rm -rf -- "$t"; fi  # left by a crash (cp -R once)
  e=$(timeout --preserve-status -s USR1 {OPEN_SECONDS} sh -c "$C" sh "$2" "$t" "${{b%%"|"*}}" 2>&1)
  case $? in
    0) ;;
    3|138) rm -f -- "$t"; echo "$1 odd"; return;;
    *) rm -f -- "$t"; echo "$1 error $(printf %s "$e" | head -n 1)"; return;;
  esac
  if [ -L "$t" ] || [ ! -f "$t" ]; then rm -f -- "$t"; echo "$1 odd"; return; fi
  {{ chmod 444 -- "$t" && sync -d -- "$t"; }} 2>"$d/e$1" & s=$!
  h=$($H < "$t") || h=-
  if ! wait $s; then rm -f -- "$t"; echo "$1 error $(head -n 1 "$d/e$1")"; return; fi
  if [ "$h" = - ]; then rm -f -- "$t"; echo "$1 error cannot hash the copy"; return; fi
  h=${{h%% *}}
  if [ "$h" != "$4" ]; then rm -f -- "$t"; echo "$1 changed $h"; return; fi
  r=$(stat -c '{STAMP}' -- "$t" "$2" 2>/dev/null)  # the copy, then the source after
  i=${{r%%"|"*}}
  case $r in *"$NL"*) a=${{r#*"$NL"}};; *) a=-;; esac
  if e=$(mv -f -- "$t" "$3" 2>&1); then
    echo "$1 ok $h $i $b $a"
  else
    rm -f -- "$t"; echo "$1 error $(printf %s "$e" | head -n 1)"
  fi
}}
work() {{ while [ $# -ge 4 ]; do one "$1" "$2" "$3" "$4"; shift 4; done; }}
"""


def copy_on_server(link: SshLink, conn: Connection, jobs: Sequence[CopyJob]) -> list[Copied]:
    """Copy ``jobs`` on the server (see the module); one :class:`Copied` per job. Raises
    :class:`StorageError` when a copy cannot be written (a full disk), so the freeze is tried
    again as a whole."""
    results: dict[int, Copied] = {}
    for batch in batches(list(enumerate(jobs)), _cost):
        link.requests["copy"] += 1
        status, out, err = link.exec(conn, _script(batch))
        lines = out.decode(errors="replace").splitlines()
        if status != 0 or len(lines) != len(batch):
            raise StorageError(
                f"Cannot copy files on {link.where}: {first_line(err) or 'unexpected output'}."
            )
        for line in lines:
            index, copied = _parse(line, jobs)
            results[index] = copied
    return [results[i] for i in range(len(jobs))]


def _script(batch: list[tuple[int, CopyJob]]) -> str:
    q = shlex.quote
    groups = [batch[i::PROCESSES] for i in range(min(PROCESSES, len(batch)))]
    workers = [
        "work "
        + " ".join(f"{i} {q(j.source)} {q(j.target)} {q(j.sha256)}" for i, j in group)
        + f' >"$d/{n}" & p{n}=$!'
        for n, group in enumerate(groups)
    ]
    waits = " && ".join(f"wait $p{n}" for n in range(len(groups)))
    outputs = " ".join(f'"$d/{n}"' for n in range(len(groups)))
    return "\n".join(
        [
            "export LC_ALL=C",
            "NL='\n'",
            "H='sha256sum'; command -v openssl >/dev/null 2>&1 && H='openssl dgst -sha256 -r'",
            f"C={shlex.quote(_COPIER)}",
            _ONE,
            "d=$(mktemp -d) || exit 1",
            "trap 'rm -rf \"$d\"' EXIT",
            *workers,
            f"{waits} && cat {outputs}",
        ]
    )


def _parse(line: str, jobs: Sequence[CopyJob]) -> tuple[int, Copied]:
    index_text, _, rest = line.partition(" ")
    index = int(index_text)
    what, _, detail = rest.partition(" ")
    job = jobs[index]
    if what == "missing":
        return index, Copied("is missing")
    if what == "odd":
        return index, Copied("is not a regular file")
    if what == "changed":
        return index, Copied("changed", detail)
    if what == "ok":
        digest, ino, before, after = detail.split(" ")
        stamp = parse_stamp(before)
        unchanged = stamp is not None and stamp == parse_stamp(after)
        return index, Copied("", digest, stamp if unchanged else None, int(ino))
    raise StorageError(f"Cannot copy {job.source}: {detail or what}.")


def parse_stamp(text: str) -> Stamp | None:
    """A :class:`Stamp` from ``stat -c STAMP`` output; None for ``-`` (absent)."""
    fields = text.strip().split("|")
    if len(fields) != 4:
        return None
    ino, size, mtime, ctime = fields
    return Stamp(int(ino), int(size), _ns(mtime), _ns(ctime))


def stamp_command(path_var: str = '"$p"') -> str:
    """Shell that prints the stamp of a regular file at ``$p``, or ``-``."""
    return (
        f"{{ [ -f {path_var} ] && [ ! -L {path_var} ] && "
        f"stat -c '{STAMP}' -- {path_var}; }} 2>/dev/null || echo -"
    )


def _ns(text: str) -> int:
    """``1796293461.565084569`` in nanoseconds."""
    seconds, _, fraction = text.partition(".")
    return int(seconds) * 10**9 + int((fraction + "000000000")[:9])


def _cost(item: tuple[int, CopyJob]) -> int:
    """The bytes one job adds to the copy command: its paths, its digest and index."""
    return len(item[1].source) + len(item[1].target) + 100
