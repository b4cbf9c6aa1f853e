"""The promotion trusts the bot's areas only as they are (bot/storage/workarea.py
``check_area``): the work folder and the frozen area are each checked, every time, and
never made again. An area taken over by another account since the freeze, or gone, stops
the promotion in a sentence naming that folder; nothing becomes public."""

from __future__ import annotations

import os
import shutil

import pytest

from bot.storage.local import LocalStorage
from bot.storage.workarea import WorkAreaUntrusted
from tests.storage.test_freeze_more_rules import PLAN, storage

__all__ = ["storage"]


def test_a_frozen_area_taken_over_by_another_account_stops_the_promotion(
    storage: LocalStorage,
) -> None:
    assert storage.freeze(PLAN) == []
    area = storage.work / "frozen"
    os.chown(area, 1, 1)  # an uploader's account holds it now, the copies unchanged

    with pytest.raises(WorkAreaUntrusted) as stopped:
        storage.promote(PLAN)

    assert str(stopped.value).startswith(f"The bot's work folder {area} cannot be trusted (")
    assert "owned by uid 1" in str(stopped.value)
    assert not (storage.public / "3.14.1").exists()


@pytest.mark.parametrize("gone", ["work", "frozen area"])
def test_a_bots_area_gone_since_the_freeze_is_named_and_never_made_again(
    storage: LocalStorage, gone: str
) -> None:
    assert storage.freeze(PLAN) == []
    folder = storage.work if gone == "work" else storage.work / "frozen"
    shutil.rmtree(folder)

    with pytest.raises(WorkAreaUntrusted) as stopped:
        storage.promote(PLAN)

    assert str(stopped.value) == (
        f"The bot's work folder {folder} is gone (moved or removed since the bot made it)."
    )
    assert not folder.exists()
    assert not (storage.public / "3.14.1").exists()
