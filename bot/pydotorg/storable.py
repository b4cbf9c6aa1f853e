"""What python.org's database can hold, checked before anything is written: a record it
cannot store is answered with a 500 that looks like a passing failure. The rule is the
domain's (:func:`bot.domain.records.unstorable`); ``/publish`` refuses such a plan before
anything is public, and the registry checks again before its first write."""

from __future__ import annotations

from bot.domain.records import PlannedRecord, unstorable
from bot.errors import RegistryError


def check_storable(records: list[PlannedRecord]) -> None:
    """Raise :class:`RegistryError` (nothing written) when python.org cannot hold one of
    ``records``."""
    if problems := unstorable(records):
        text = "; ".join(problems)
        raise RegistryError(f"{text[0].upper()}{text[1:]}; nothing was written.")
