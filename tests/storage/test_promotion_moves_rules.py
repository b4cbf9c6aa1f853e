"""Rules of which of the bot's copies become public by one folder rename and which are linked
one by one (bot/storage/promotion.py), seen in what the local backend does to public."""

from __future__ import annotations

from pathlib import Path

from bot.ports import PromotionReport
from bot.storage.local import LocalStorage
from tests.storage.conftest import Backend, plan_for, publish

TAG = "3.14.0rc2"
TARBALL = "Python-3.14.0rc2.tgz"
MSIS = ["win/amd64rc2/core.msi", "win/amd64rc2/dev.msi"]


class RecordingLocal(LocalStorage):
    """The local backend, noting each move into public in the order it happens."""

    def __init__(self, staging: Path, public: Path) -> None:
        super().__init__(staging, public)
        self.public_root = public
        self.moves: list[str] = []

    def _rename(self, source: Path, target: Path) -> None:
        super()._rename(source, target)
        self.moves.append(f"rename {target.relative_to(self.public_root)}")

    def _link(self, source: Path, target: Path) -> None:
        super()._link(source, target)
        self.moves.append(f"link {target.relative_to(self.public_root)}")


def test_a_new_folder_deeper_inside_a_folder_that_gets_single_files_joins_the_batch_of_links(
    tmp_path: Path,
) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"
    staging.mkdir()
    public.mkdir()
    storage = RecordingLocal(staging, public)
    backend = Backend("local", staging, public, lambda: storage, None)  # type: ignore[arg-type]
    # rc1 is public in the shared 3.14.0/ folder, with its MSIs in 3.14.0/win/amd64rc1/.
    for path in ["Python-3.14.0rc1.tgz", "win/amd64rc1/core.msi"]:
        (public / "3.14.0" / path).parent.mkdir(parents=True, exist_ok=True)
        (public / "3.14.0" / path).write_text(f"rc1 {path}")
    for path in [TARBALL, *MSIS]:
        backend.write(TAG, path, f"content of {path}")
    plan = plan_for(backend, TAG, [TARBALL, *MSIS])
    assert storage.freeze(plan) == []
    frozen_msis = backend.copy_of(TAG, "3.14.0/win/amd64rc2").stat().st_ino

    report = storage.promote(plan)

    # The tarball goes into 3.14.0/ by a link; rc2's new MSI folder, though absent in public,
    # is not renamed first (it would show before the tarball): its files are linked too, in
    # plan order, in the same batch.
    assert report == PromotionReport(moved=3)
    assert storage.moves == [f"link 3.14.0/{p}" for p in [TARBALL, *MSIS]]
    assert (public / "3.14.0" / "win" / "amd64rc2").stat().st_ino != frozen_msis
    assert backend.public_files() == {
        "3.14.0/Python-3.14.0rc1.tgz": b"rc1 Python-3.14.0rc1.tgz",
        "3.14.0/win/amd64rc1/core.msi": b"rc1 win/amd64rc1/core.msi",
        **{f"3.14.0/{p}": f"content of {p}".encode() for p in [TARBALL, *MSIS]},
    }


def test_a_new_folder_in_a_public_folder_that_gets_no_single_files_is_still_renamed_whole(
    tmp_path: Path,
) -> None:
    staging, public = tmp_path / "staging", tmp_path / "public"
    staging.mkdir()
    public.mkdir()
    storage = RecordingLocal(staging, public)
    backend = Backend("local", staging, public, lambda: storage, None)  # type: ignore[arg-type]
    (public / "3.14.0" / "win" / "amd64rc1").mkdir(parents=True)
    (public / "3.14.0" / "win" / "amd64rc1" / "core.msi").write_text("rc1 msi")
    for path in MSIS:
        backend.write(TAG, path, f"content of {path}")

    report = publish(storage, plan_for(backend, TAG, MSIS))

    # Nothing else goes into 3.14.0/: the MSI folder appears whole by one rename.
    assert report == PromotionReport(renamed=("3.14.0/win/amd64rc2",), moved=0)
    assert storage.moves == ["rename 3.14.0/win/amd64rc2"]
