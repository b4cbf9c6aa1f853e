"""What python.org's database can hold, checked before anything is written: a record it
cannot store is answered with a 500 that looks like a passing failure."""

from __future__ import annotations

from typing import Final

from bot.domain.records import PlannedRecord
from bot.errors import RegistryError

# ReleaseFile's columns: an IntegerField file size, 200-character names, slugs and URLs.
MAX_FILESIZE: Final = 2**31
MAX_LENGTH: Final = 200


def check_storable(record: PlannedRecord) -> None:
    """Refuse, before any write, a record python.org's database cannot hold: it answers
    those with a 500 that looks like a passing failure."""
    if not 0 <= record.filesize < MAX_FILESIZE:
        raise RegistryError(
            f"{record.target} is {record.filesize} bytes; python.org stores a file size below "
            f"2**31 ({MAX_FILESIZE} bytes) only, so it cannot be registered; nothing was written."
        )
    for field, value in (
        ("name", record.name),
        ("slug", record.slug),
        ("url", record.url),
        *record.sidecars,
    ):
        if len(value) > MAX_LENGTH:
            raise RegistryError(
                f"The python.org {field} of {record.target} would be {len(value)} characters "
                f"long; python.org stores {MAX_LENGTH} at most, so nothing was written "
                "(shorten the file name or the profile's [pydotorg] rule)."
            )
