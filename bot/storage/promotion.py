"""How a plan maps onto folder moves; shared by every storage backend."""

from __future__ import annotations

from dataclasses import dataclass

from bot.domain.plan import PlanFile, PublishPlan


@dataclass(frozen=True)
class FolderMove:
    """Files going from one staging folder to one public folder.

    When ``target`` does not exist yet, renaming ``source`` onto it moves every file at once.
    """

    source: str  # relative to the release's staging folder ("" for the folder itself)
    target: str  # relative to the public root
    files: tuple[PlanFile, ...]


def folder_moves(plan: PublishPlan) -> list[FolderMove]:
    """Group the plan by (staging folder, public folder), innermost staging folders first
    (``docs/`` leaves before the release folder it sits in is renamed)."""
    groups: dict[tuple[str, str], list[PlanFile]] = {}
    for f in plan.files:
        groups.setdefault(_split(f), []).append(f)
    moves = [FolderMove(src, dst, tuple(files)) for (src, dst), files in groups.items()]
    return sorted(moves, key=lambda m: -len(m.source))


def join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _split(f: PlanFile) -> tuple[str, str]:
    """The longest common trailing path of ``f.path`` and ``f.target`` is what moves along."""
    src, dst = f.path.split("/"), f.target.split("/")
    common = 0
    while common < min(len(src), len(dst) - 1) and src[-1 - common] == dst[-1 - common]:
        common += 1
    return "/".join(src[: len(src) - common]), "/".join(dst[: len(dst) - common])
