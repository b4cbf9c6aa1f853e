"""Staging and public must be two separate folders: if they are one (or nested, or the same
through a symbolic link), publishing moves files onto themselves and loses them."""

from __future__ import annotations

from pathlib import PurePath


def folders_overlap(staging: PurePath, public: PurePath) -> bool:
    """Whether two resolved folders are one, or one is inside the other."""
    return staging == public or staging.is_relative_to(public) or public.is_relative_to(staging)


def overlap_message(staging: str, public: str) -> str:
    """The one sentence that says so, naming both keys."""
    return (
        f"storage.staging and storage.public overlap ({staging} and {public}: the same "
        "folder, one inside the other, or one through a symbolic link); publishing would "
        "move files onto themselves and lose them, so give them two separate folders."
    )
