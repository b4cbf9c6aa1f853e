"""What every storage backend offers the freezer and the promoter: the primitives over
absolute paths (:class:`Primitives`), a path as ``lstat`` sees it, and the places on one
backend (staging, the bot's frozen area, public)."""

from __future__ import annotations

import posixpath
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.domain.plan import PlanFile, PublishPlan
from bot.errors import StorageError

AREA = ".relbot-frozen"  # in the staging root: same filesystem, never a release tag
AREA_MODE = 0o700
FOLDER_MODE = 0o775  # folders the bot makes inside the area (it may become public whole)
# and in staging when files go back


@dataclass(frozen=True)
class Entry:
    """A path as ``lstat`` sees it (links are never followed)."""

    mode: int  # st_mode: type and permission bits
    uid: int

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    @property
    def is_file(self) -> bool:
        return stat.S_ISREG(self.mode)


class Primitives(Protocol):
    """What a backend offers the freezer. Paths are absolute on the backend. Failures raise
    ``OSError`` (``FileExistsError`` when a no-clobber call finds its target taken)."""

    def uid(self) -> int:
        """The bot's own user id on the backend."""
        ...

    def lstat(self, path: str) -> Entry | None:
        """None when nothing is there."""
        ...

    def listdir(self, path: str) -> dict[str, Entry] | None:
        """The folder's entries by name (one round trip), or None when it does not exist."""
        ...

    def rename(self, source: str, target: str) -> None:
        """Move within the filesystem; the caller has checked that ``target`` is absent."""
        ...

    def link(self, source: str, target: str) -> None:
        """A second name; ``FileExistsError`` when ``target`` exists (never replaced)."""
        ...

    def remove(self, path: str) -> None: ...

    def rmdir(self, path: str) -> bool:
        """False when the folder is not empty."""
        ...

    def mkdir(self, path: str, mode: int) -> None: ...

    def hash(self, paths: Sequence[str]) -> dict[str, str]:
        """SHA-256 of regular files, computed afresh where they are."""
        ...


@dataclass(frozen=True)
class Places:
    """The three roots of one backend."""

    staging: str
    public: str

    @property
    def area(self) -> str:
        return posixpath.join(self.staging, AREA)

    def staged(self, plan: PublishPlan, path: str = "") -> str:
        return inside(posixpath.join(self.staging, str(plan.tag)), path)

    def frozen(self, plan: PublishPlan, path: str = "") -> str:
        return inside(posixpath.join(self.area, str(plan.tag)), path)

    def target(self, f: PlanFile) -> str:
        return inside(self.public, f.target)


def inside(root: str, relative: str) -> str:
    """``root/relative``, refusing anything that would step outside ``root``."""
    if relative.startswith("/") or ".." in relative.split("/"):
        raise StorageError(f"{relative!r} is not a path inside {root}.")
    return posixpath.join(root, relative) if relative else root
