"""Files that cannot be the artifact, in the domain's words (bot/domain/readiness.py): larger
than the profile allows (at once, even while it grows), sparse (only once it stopped
growing: a parallel upload writes its chunks out of order), a hashing fault, a folder named
like a required file, and a required file a cut listing did not reach."""

from __future__ import annotations

import pytest

from bot.domain.files import CROWDED, RELEASE_FOLDER, SPARSE_FROM, StagedFile
from bot.domain.profile import GIB, Profile, load_profile
from bot.domain.readiness import FileStatus, compute_readiness
from bot.domain.waivers import Waiver
from tests.domain.test_readiness import T0, TAG, complete_listing, file_of, with_files

TARBALL = "Python-3.14.1.tar.xz"


@pytest.fixture(scope="module")
def cpython() -> Profile:
    return load_profile("cpython")


def test_the_profile_bounds_artifacts_and_each_sidecar_by_the_end_of_its_name(
    cpython: Profile,
) -> None:
    assert cpython.size_limit(TARBALL) == 4 * GIB
    assert cpython.size_limit(TARBALL + ".sigstore") == 1 << 20
    assert cpython.size_limit(TARBALL + ".sig") == 1 << 16
    assert cpython.size_limit(TARBALL + ".spdx.json") == 64 << 20
    assert cpython.size_limit("windows-3.14.1.json") == 4 * GIB  # .json is not .spdx.json


def test_a_file_larger_than_allowed_is_unusable_even_while_it_grows(cpython: Profile) -> None:
    listing = with_files(complete_listing(cpython), StagedFile(TARBALL, 5 * GIB, T0 + 1))

    f = file_of(compute_readiness(cpython, TAG, listing, previous={}), TARBALL)

    assert f.status is FileStatus.UNUSABLE
    assert f.note == (
        "5.4 GB, more than the 4.3 GB such a file may be; remove it and upload the real file"
    )


def test_a_file_of_exactly_the_limit_is_present(cpython: Profile) -> None:
    listing = with_files(
        complete_listing(cpython), StagedFile(TARBALL, 4 * GIB, T0, allocated=4 * GIB)
    )

    assert file_of(compute_readiness(cpython, TAG, listing), TARBALL).status is FileStatus.PRESENT


def test_a_sparse_file_is_unusable_once_settled_and_uploading_while_it_grows(
    cpython: Profile,
) -> None:
    holes = StagedFile(TARBALL, SPARSE_FROM, T0, allocated=0)
    listing = with_files(complete_listing(cpython), holes)

    settled = file_of(compute_readiness(cpython, TAG, listing, previous=listing), TARBALL)
    growing = file_of(compute_readiness(cpython, TAG, listing, previous={}), TARBALL)

    assert settled.status is FileStatus.UNUSABLE and "a sparse file" in settled.note
    assert growing.status is FileStatus.UPLOADING


@pytest.mark.parametrize(
    ("size", "allocated", "status"),
    [
        (SPARSE_FROM - 1, 0, FileStatus.PRESENT),  # small: hashing it costs nothing
        (SPARSE_FROM, SPARSE_FROM // 8, FileStatus.PRESENT),  # an eighth on disk
        (SPARSE_FROM, SPARSE_FROM // 8 - 1, FileStatus.UNUSABLE),
        (SPARSE_FROM, None, FileStatus.PRESENT),  # the storage cannot tell
    ],
)
def test_sparse_is_a_large_file_with_under_an_eighth_of_it_on_disk(
    cpython: Profile, size: int, allocated: int | None, status: FileStatus
) -> None:
    listing = with_files(
        complete_listing(cpython), StagedFile(TARBALL, size, T0, allocated=allocated)
    )

    assert file_of(compute_readiness(cpython, TAG, listing), TARBALL).status is status


def test_a_hashing_fault_is_the_files_note_as_given(cpython: Profile) -> None:
    why = "cannot be hashed: gone; remove it and upload the real file"

    f = file_of(
        compute_readiness(cpython, TAG, complete_listing(cpython), faults={TARBALL: why}), TARBALL
    )

    assert (f.status, f.note) == (FileStatus.UNUSABLE, why)


@pytest.mark.parametrize("inside", [f"{TARBALL}/x.bin", f"{TARBALL}/deeper/x.bin", f"{TARBALL}/"])
def test_a_folder_named_like_a_required_file_is_not_a_regular_file(
    cpython: Profile, inside: str
) -> None:
    listing = {p: f for p, f in complete_listing(cpython).items() if p != TARBALL}
    listing[inside] = StagedFile(inside, 1, T0)

    f = file_of(compute_readiness(cpython, TAG, listing), TARBALL)

    assert f.status is FileStatus.NOT_REGULAR and f.note.startswith("a folder, not a regular file")


def test_a_folder_whose_name_only_begins_like_a_required_file_leaves_it_missing(
    cpython: Profile,
) -> None:
    listing = {p: f for p, f in complete_listing(cpython).items() if p != TARBALL}
    listing[TARBALL + "-old/x.bin"] = StagedFile(TARBALL + "-old/x.bin", 1, T0)

    assert file_of(compute_readiness(cpython, TAG, listing), TARBALL).status is FileStatus.MISSING


def test_a_required_file_a_cut_listing_did_not_reach_is_not_listed(cpython: Profile) -> None:
    listing = {p: f for p, f in complete_listing(cpython).items() if p != TARBALL}
    listing[RELEASE_FOLDER] = StagedFile("", 0, 0.0, regular=False, problem=f"{CROWDED} 9 files")

    readiness = compute_readiness(cpython, TAG, listing)

    assert file_of(readiness, TARBALL).status is FileStatus.NOT_LISTED and readiness.cut
    assert not compute_readiness(cpython, TAG, complete_listing(cpython)).cut


@pytest.mark.parametrize("inside", ["x.html", "html/x.html", ""])
def test_a_folder_named_like_a_required_file_of_a_subfolder_is_not_a_regular_file(
    cpython: Profile, inside: str
) -> None:
    docs = next(f.path for f in cpython.expected(TAG) if f.path.startswith("docs/"))
    listing = {p: f for p, f in complete_listing(cpython).items() if p != docs}
    listing[f"{docs}/{inside}"] = StagedFile(f"{docs}/{inside}", 1, T0)

    f = file_of(compute_readiness(cpython, TAG, listing), docs)

    assert f.status is FileStatus.NOT_REGULAR and f.note.startswith("a folder, not a regular file")


def test_an_unexpected_file_waived_to_be_published_keeps_why_it_cannot_be(
    cpython: Profile,
) -> None:
    extra = "python-3.14.1-extra.tar.gz"
    listing = with_files(complete_listing(cpython), StagedFile(extra, 5 * GIB, T0))
    waived = (Waiver(extra, is_role=False, person="hugo"),)

    readiness = compute_readiness(cpython, TAG, listing, previous=listing, waivers=waived)
    f = file_of(readiness, extra)

    assert f.status is FileStatus.UNUSABLE and f.note.startswith("5.4 GB, more than the 4.3 GB")
