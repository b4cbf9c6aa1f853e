"""Entries of a staging listing that storage could not take as files, shared by every
backend: each is reported (never followed, never published) with the reason, so one odd
entry is its release's problem and never stops a scan."""

from __future__ import annotations

from bot.domain.files import EMPTY_FOLDER, RELEASE_FOLDER, StagedFile
from bot.domain.text import is_safe, shown


def join(folder: str, name: str) -> str:
    """A listing's path: ``name`` inside ``folder`` (relative; "" is the top)."""
    return f"{folder}/{name}" if folder else name


def odd_name(path: str) -> StagedFile | None:
    """An entry for ``path`` when its name is not printable UTF-8 (a newline, an escape, a
    byte that is not UTF-8), keyed by the escaped name; None for an ordinary name."""
    if is_safe(path):
        return None
    return problem(
        shown(path), "its name has control characters or bytes that are not UTF-8; rename it"
    )


def unreadable_folder(path: str, reason: str) -> StagedFile:
    """A folder that could not be listed (``path`` ends with ``/``)."""
    return problem(path, f"a folder that cannot be read: {reason}")


def empty_folder(path: str) -> StagedFile:
    """An empty folder (``path`` ends with ``/``): not a blocker, but listed, so that a
    promotion never renames a folder that carries it (it would become public)."""
    return problem(path, EMPTY_FOLDER)


def linked_release_folder(target: str) -> StagedFile:
    return problem(
        RELEASE_FOLDER,
        f"is a symbolic link to {shown(target)}; only a real folder is published, so "
        "replace the link with the folder itself",
    )


def unreadable_release_folder(reason: str) -> StagedFile:
    return problem(RELEASE_FOLDER, f"cannot be read ({reason})")


def crowded_release_folder(limit: int) -> StagedFile:
    """The release's folder holds more entries than a walk lists (the rest is unseen)."""
    return problem(
        RELEASE_FOLDER,
        f"holds more than {limit:,} files and folders, more than the bot lists; remove what "
        "does not belong to the release",
    )


def crowded_public_folder(where: str, limit: int) -> str:
    return f"{where} holds more than {limit:,} files and folders, more than the bot lists."


def problem(path: str, reason: str) -> StagedFile:
    return StagedFile(path, 0, 0.0, regular=False, problem=reason)
