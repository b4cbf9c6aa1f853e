"""Readiness: what one staging listing (and the one before it), the claims and the holds say
about a release, file by file, role by role, and whether it can be published."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable

import pytest

from bot.domain.claims import Claim, Hold, Withdrawal
from bot.domain.files import CROWDED, EMPTY_FOLDER, StagedFile
from bot.domain.profile import Profile, load_profile
from bot.domain.readiness import (
    NAMED,
    FileReadiness,
    FileStatus,
    Readiness,
    compute_readiness,
    described,
)
from bot.domain.signing import SignatureResult, SignatureStatus
from bot.domain.tags import ReleaseTag
from bot.domain.waivers import Waiver
from bot.domain.windows_index import IndexVerdict

TAG = ReleaseTag.parse("3.14.1")
T0 = 1_800_000_000.0


@pytest.fixture(scope="module")
def cpython() -> Profile:
    return load_profile("cpython")


def complete_listing(profile: Profile, tag: ReleaseTag = TAG) -> dict[str, StagedFile]:
    """Every required file of ``tag``, settled (same listing twice)."""
    return {f.path: StagedFile(f.path, 1000 + i, T0) for i, f in enumerate(profile.expected(tag))}


def with_files(listing: dict[str, StagedFile], *files: StagedFile) -> dict[str, StagedFile]:
    return {**listing, **{f.path: f for f in files}}


def without(listing: dict[str, StagedFile], *paths: str) -> dict[str, StagedFile]:
    return {p: f for p, f in listing.items() if p not in paths}


def claims_for(roles: Iterable[str]) -> dict[str, Claim]:
    return {role: Claim(role, "hugo", T0, ()) for role in roles}


def file_of(readiness: Readiness, path: str) -> FileReadiness:
    every = [f for role in readiness.roles for f in role.files] + list(readiness.stray)
    return next(f for f in every if f.path == path)


def status_of(readiness: Readiness, path: str) -> FileStatus:
    return file_of(readiness, path).status


def readiness_of(
    profile: Profile, listing: dict[str, StagedFile], previous: dict[str, StagedFile] | None
) -> Readiness:
    return compute_readiness(profile, TAG, listing, previous=previous)


# -- per file ---------------------------------------------------------------------------------


def test_a_settled_required_file_is_present(cpython: Profile) -> None:
    listing = complete_listing(cpython)

    readiness = readiness_of(cpython, listing, listing)

    assert status_of(readiness, "python-3.14.1.exe") is FileStatus.PRESENT
    assert all(role.complete for role in readiness.roles)


def test_a_first_listing_without_a_previous_one_counts_files_as_present(cpython: Profile) -> None:
    readiness = readiness_of(cpython, complete_listing(cpython), None)

    assert status_of(readiness, "Python-3.14.1.tgz") is FileStatus.PRESENT


def test_a_required_file_not_staged_is_missing(cpython: Profile) -> None:
    listing = without(complete_listing(cpython), "python-3.14.1-macos11.pkg")

    readiness = readiness_of(cpython, listing, listing)

    macos = readiness.role("macos")
    assert [(f.path, f.status) for f in macos.files] == [
        ("python-3.14.1-macos11.pkg", FileStatus.MISSING)
    ]
    assert not macos.complete
    assert macos.problems[0].describe() == "python-3.14.1-macos11.pkg (missing)"


@pytest.mark.parametrize(
    "name",
    [
        ".python-3.14.1-macos11.pkg",  # a leading dot: rsync, scp -T, many clients
        "python-3.14.1-macos11.pkg.part",
        "python-3.14.1-macos11.pkg.tmp",
        "docs/.python-3.14.1-docs.epub.XYZ123",
    ],
)
def test_a_file_with_a_partial_upload_name_is_uploading(cpython: Profile, name: str) -> None:
    partial = StagedFile(name, 500, T0)
    listing = with_files(complete_listing(cpython), partial)

    readiness = readiness_of(cpython, listing, listing)

    assert status_of(readiness, name) is FileStatus.UPLOADING
    assert f"staging: {name} (uploading)" in readiness.blockers


def test_a_file_whose_size_moved_since_the_previous_listing_is_uploading(cpython: Profile) -> None:
    previous = complete_listing(cpython)
    growing = StagedFile(
        "python-3.14.1-amd64.exe", previous["python-3.14.1-amd64.exe"].size + 1, T0
    )

    readiness = readiness_of(cpython, with_files(previous, growing), previous)

    assert status_of(readiness, "python-3.14.1-amd64.exe") is FileStatus.UPLOADING
    assert not readiness.role("windows").complete


def test_a_file_whose_mtime_moved_since_the_previous_listing_is_uploading(cpython: Profile) -> None:
    previous = complete_listing(cpython)
    old = previous["Python-3.14.1.tgz"]
    touched = StagedFile(old.path, old.size, old.mtime + 1)

    readiness = readiness_of(cpython, with_files(previous, touched), previous)

    assert status_of(readiness, "Python-3.14.1.tgz") is FileStatus.UPLOADING


def test_a_file_absent_from_the_previous_listing_is_uploading(cpython: Profile) -> None:
    listing = complete_listing(cpython)
    previous = without(listing, "windows-3.14.1.json")

    readiness = readiness_of(cpython, listing, previous)

    assert status_of(readiness, "windows-3.14.1.json") is FileStatus.UPLOADING
    assert status_of(readiness, "python-3.14.1.exe") is FileStatus.PRESENT


def test_a_file_merely_recent_is_not_uploading(cpython: Profile) -> None:
    now = time.time()
    listing = {
        path: StagedFile(path, entry.size, now) for path, entry in complete_listing(cpython).items()
    }

    readiness = readiness_of(cpython, listing, dict(listing))

    assert {f.status for role in readiness.roles for f in role.files} == {FileStatus.PRESENT}


def test_an_empty_required_file_is_empty(cpython: Profile) -> None:
    empty = StagedFile("python-3.14.1-macos11.pkg", 0, T0)
    listing = with_files(complete_listing(cpython), empty)

    readiness = readiness_of(cpython, listing, listing)

    assert status_of(readiness, "python-3.14.1-macos11.pkg") is FileStatus.EMPTY
    assert not readiness.role("macos").complete


def test_a_stray_file_is_unexpected_and_blocks(cpython: Profile) -> None:
    listing = with_files(complete_listing(cpython), StagedFile("notes.txt", 10, T0))

    readiness = readiness_of(cpython, listing, listing)

    assert [(f.path, f.status) for f in readiness.stray] == [("notes.txt", FileStatus.UNEXPECTED)]
    assert "staging: notes.txt (unexpected)" in readiness.blockers
    assert all(role.complete for role in readiness.roles)  # no role is blamed for it


def test_a_symlink_in_place_of_a_required_file_is_not_a_regular_file(cpython: Profile) -> None:
    link = StagedFile("Python-3.14.1.tar.xz", 30, T0, regular=False)
    listing = with_files(complete_listing(cpython), link)

    readiness = readiness_of(cpython, listing, listing)

    assert status_of(readiness, "Python-3.14.1.tar.xz") is FileStatus.NOT_REGULAR
    assert not readiness.role("source").complete
    assert "Python-3.14.1.tar.xz (not a regular file)" in readiness.blockers[0]


def test_allowed_files_and_sidecars_join_their_roles_as_optional_files(cpython: Profile) -> None:
    extras = [
        StagedFile("python-3.14.1-amd64.exe.sigstore", 5, T0),
        StagedFile("amd64/core.msi", 5, T0),
        StagedFile("docs/python-3.14.1-docs.epub.sigstore", 5, T0),
    ]
    listing = with_files(complete_listing(cpython), *extras)

    readiness = readiness_of(cpython, listing, listing)

    windows = {f.path: f for f in readiness.role("windows").files}
    assert windows["amd64/core.msi"].status is FileStatus.PRESENT
    assert not windows["amd64/core.msi"].required
    assert not windows["python-3.14.1-amd64.exe.sigstore"].required
    assert "docs/python-3.14.1-docs.epub.sigstore" in {
        f.path for f in readiness.role("docs").present
    }
    assert readiness.stray == ()


def test_a_growing_sidecar_keeps_its_role_incomplete(cpython: Profile) -> None:
    previous = with_files(
        complete_listing(cpython), StagedFile("Python-3.14.1.tgz.sigstore", 5, T0)
    )
    listing = with_files(previous, StagedFile("Python-3.14.1.tgz.sigstore", 9, T0))

    readiness = readiness_of(cpython, listing, previous)

    assert not readiness.role("source").complete


# -- per role and per release -----------------------------------------------------------------


def test_a_role_is_complete_claimed_or_withdrawn(cpython: Profile) -> None:
    listing = complete_listing(cpython)
    withdrawal = Withdrawal("macos", "hugo", "python-3.14.1-macos11.pkg changed", T0)

    readiness = compute_readiness(
        cpython,
        TAG,
        listing,
        previous=listing,
        claims=claims_for(["source", "docs"]),
        withdrawals={"macos": withdrawal},
    )

    assert readiness.role("source").claim is not None
    assert readiness.role("windows").claim is None
    assert readiness.role("windows").complete
    assert readiness.role("macos").claim is None
    assert readiness.role("macos").withdrawal == withdrawal
    assert readiness.claimed_roles == 2


def test_roles_are_reported_in_profile_order_and_only_those_taking_part(cpython: Profile) -> None:
    beta = ReleaseTag.parse("3.14.0b1")

    readiness = compute_readiness(cpython, beta, complete_listing(cpython, beta))

    assert [r.role for r in readiness.roles] == ["source", "windows", "macos"]


def test_every_unclaimed_role_is_a_blocker(cpython: Profile) -> None:
    listing = complete_listing(cpython)

    readiness = compute_readiness(
        cpython, TAG, listing, previous=listing, claims=claims_for(["source", "docs", "windows"])
    )

    assert readiness.blockers == ["macos: nobody said /ready macos 3.14.1"]
    assert not readiness.publishable


def test_a_hold_is_a_blocker_naming_who_and_why(cpython: Profile) -> None:
    listing = complete_listing(cpython)

    readiness = compute_readiness(
        cpython,
        TAG,
        listing,
        previous=listing,
        claims=claims_for(cpython.roles),
        holds=(Hold("ned", "notarization pending", T0),),
    )

    assert readiness.blockers == ["held by ned: notarization pending"]
    assert not readiness.publishable


def test_a_release_with_every_role_claimed_and_complete_is_publishable(cpython: Profile) -> None:
    listing = with_files(complete_listing(cpython), StagedFile("Python-3.14.1.tgz.sigstore", 5, T0))

    readiness = compute_readiness(
        cpython, TAG, listing, previous=listing, claims=claims_for(cpython.roles)
    )

    assert readiness.blockers == []
    assert readiness.publishable
    assert readiness.claimed_roles == 4


SIGNATURES = (
    SignatureResult("Python-3.14.1.tgz", SignatureStatus.INVALID, "signed by mallory"),
    SignatureResult("Python-3.14.1.tar.xz", SignatureStatus.MISSING),
    SignatureResult("python-3.14.1-docs.pdf", SignatureStatus.VALID),
)


def publishable_release(profile: Profile) -> Readiness:
    listing = complete_listing(profile)
    return compute_readiness(
        profile, TAG, listing, previous=listing, claims=claims_for(profile.roles)
    )


def test_a_signature_that_does_not_verify_blocks_where_signatures_are_required(
    cpython: Profile,
) -> None:
    """A missing one does not (it is signed at the confirmation); where signatures are not
    required, a bad one is named (signature_problems) but does not block."""
    signed = dataclasses.replace(
        publishable_release(cpython), signatures=SIGNATURES, signatures_required=True
    )

    assert signed.blockers == ["signature of Python-3.14.1.tgz: signed by mallory"]
    assert signed.invalid_signatures == SIGNATURES[:1]
    assert signed.signature_problems == SIGNATURES[:2]
    unsigned = dataclasses.replace(signed, signatures_required=False)
    assert unsigned.blockers == [] and unsigned.publishable
    assert unsigned.signature_problems == SIGNATURES[:1]


def test_the_install_index_s_reasons_block_the_release_and_an_index_left_alone_does_not(
    cpython: Profile,
) -> None:
    release = publishable_release(cpython)
    wrong = IndexVerdict(True, ("index-windows.json no longer lists 3.14.0",))

    assert dataclasses.replace(release, install_index=wrong).blockers == [
        "index-windows.json no longer lists 3.14.0"
    ]
    assert dataclasses.replace(release, install_index=IndexVerdict(False)).publishable


def test_an_empty_folder_in_staging_neither_blocks_nor_joins_a_role(cpython: Profile) -> None:
    empty = StagedFile("extras/", 0, 0.0, regular=False, problem=EMPTY_FOLDER)
    listing = with_files(complete_listing(cpython), empty)

    readiness = compute_readiness(
        cpython, TAG, listing, previous=listing, claims=claims_for(cpython.roles)
    )

    assert readiness.stray == () and readiness.blockers == []
    assert "extras/" not in [f.path for role in readiness.roles for f in role.files]


def test_past_twenty_unexpected_entries_the_blockers_name_twenty_and_count_the_rest(
    cpython: Profile,
) -> None:
    junk = [StagedFile(f"junk-{i:02}.txt", 1, T0) for i in range(NAMED + 3)]
    listing = with_files(complete_listing(cpython), *junk)

    readiness = compute_readiness(
        cpython, TAG, listing, previous=listing, claims=claims_for(cpython.roles)
    )

    staging = [b for b in readiness.blockers if b.startswith("staging: ")]
    assert len(staging) == NAMED + 1
    assert staging[0] == "staging: junk-00.txt (unexpected)"
    assert staging[-1] == "staging: 3 more unexpected entries"


def test_only_a_crowded_release_folder_makes_a_file_not_seen_not_listed_rather_than_missing(
    cpython: Profile,
) -> None:
    """A walk that stopped at its budget may have missed the file; a folder that is a link,
    or cannot be read, has its own blocker, and its files are missing."""
    path = "python-3.14.1-arm64.exe"
    listing = without(complete_listing(cpython), path)
    crowded = StagedFile("", 0, 0.0, regular=False, problem=f"{CROWDED} 10,000 files")
    unreadable = StagedFile("", 0, 0.0, regular=False, problem="cannot be read (EACCES)")
    linked = StagedFile("", 0, 0.0, regular=False, problem="is a symbolic link to /x")

    seen = {
        folder.problem: status_of(readiness_of(cpython, with_files(listing, folder), None), path)
        for folder in (crowded, unreadable, linked)
    }

    assert list(seen.values()) == [FileStatus.NOT_LISTED, FileStatus.MISSING, FileStatus.MISSING]


def test_an_unreadable_folder_inside_a_role_s_folder_is_a_staging_problem_not_the_role_s(
    cpython: Profile,
) -> None:
    folder = StagedFile("amd64/x/", 0, 0.0, regular=False, problem="a folder that cannot be read")
    listing = with_files(complete_listing(cpython), folder)

    readiness = readiness_of(cpython, listing, listing)

    assert [f.path for f in readiness.stray] == ["amd64/x/"]
    assert readiness.role("windows").complete
    assert "staging: amd64/x/ (a folder that cannot be read)" in readiness.blockers


def test_a_role_whose_every_file_is_waived_one_by_one_still_needs_its_ready(
    cpython: Profile,
) -> None:
    """Only a waiver of the role itself excuses a role; with nothing of it published
    earlier, a role with no file left is not 'already public'."""
    listing = without(complete_listing(cpython), "python-3.14.1-macos11.pkg")
    waived = Waiver("python-3.14.1-macos11.pkg", is_role=False, person="hugo")
    claims = claims_for(r for r in cpython.roles if r != "macos")

    readiness = compute_readiness(
        cpython, TAG, listing, previous=listing, claims=claims, waivers=(waived,)
    )

    assert readiness.role("macos").files == ()
    assert not readiness.role("macos").already_public
    assert readiness.blockers == ["macos: nobody said /ready macos 3.14.1"]


def test_a_claimed_role_whose_file_went_missing_blocks_with_the_file_named(
    cpython: Profile,
) -> None:
    listing = without(complete_listing(cpython), "python-3.14.1-arm64.exe")

    readiness = compute_readiness(
        cpython, TAG, listing, previous=listing, claims=claims_for(cpython.roles)
    )

    assert readiness.blockers == ["windows: python-3.14.1-arm64.exe (missing)"]


def test_a_stray_file_blocks_even_when_every_role_is_claimed(cpython: Profile) -> None:
    listing = with_files(complete_listing(cpython), StagedFile("Python-3.14.1.tgz.asc", 5, T0))

    readiness = compute_readiness(
        cpython, TAG, listing, previous=listing, claims=claims_for(cpython.roles)
    )

    assert readiness.blockers == ["staging: Python-3.14.1.tgz.asc (unexpected)"]


def test_waiving_one_missing_file_excuses_that_file_only(cpython: Profile) -> None:
    required = [f.path for f in cpython.expected(TAG)]
    first, later = required[0], required[-1]  # the waived one is judged before the other
    listing = without(complete_listing(cpython), first, later)
    waived = (Waiver(first, is_role=False, person="hugo"),)

    readiness = compute_readiness(
        cpython,
        TAG,
        listing,
        previous=listing,
        claims=claims_for(cpython.roles_for(TAG)),
        waivers=waived,
    )

    assert status_of(readiness, later) is FileStatus.MISSING
    assert not readiness.publishable
    assert any(later in blocker for blocker in readiness.blockers), readiness.blockers


# -- what each file carries (the board and the status show role, optional, size) ---------------


def test_a_staged_required_file_carries_its_role_and_size_and_is_required(cpython: Profile) -> None:
    listing = complete_listing(cpython)
    staged = listing["python-3.14.1-arm64.exe"]

    readiness = readiness_of(cpython, listing, listing)

    assert file_of(readiness, staged.path) == FileReadiness(
        staged.path, FileStatus.PRESENT, "windows", True, staged.size
    )


def test_a_required_file_storage_could_not_take_is_described_by_storage_s_reason(
    cpython: Profile,
) -> None:
    broken = StagedFile("python-3.14.1-arm64.exe", 0, T0, regular=False, problem="cannot be read")
    listing = with_files(complete_listing(cpython), broken)

    readiness = readiness_of(cpython, listing, listing)

    assert "windows: python-3.14.1-arm64.exe (cannot be read)" in readiness.blockers


def test_a_macos_installer_built_on_another_macos_stands_for_the_required_one(
    cpython: Profile,
) -> None:
    macos14 = StagedFile("python-3.14.1-macos14.pkg", 5, T0)
    listing = with_files(without(complete_listing(cpython), "python-3.14.1-macos11.pkg"), macos14)

    readiness = readiness_of(cpython, listing, listing)

    assert readiness.role("macos").files == (
        FileReadiness(macos14.path, FileStatus.PRESENT, "macos", True, 5),
    )


def test_an_allowed_file_carries_its_role_and_size_and_is_optional(cpython: Profile) -> None:
    msi = StagedFile("amd64/core.msi", 5, T0)
    listing = with_files(complete_listing(cpython), msi)

    readiness = readiness_of(cpython, listing, listing)

    assert file_of(readiness, msi.path) == FileReadiness(
        msi.path, FileStatus.PRESENT, "windows", False, 5
    )


def test_a_stray_file_carries_its_size_and_no_role(cpython: Profile) -> None:
    listing = with_files(complete_listing(cpython), StagedFile("notes.txt", 10, T0))

    readiness = readiness_of(cpython, listing, listing)

    assert readiness.stray == (FileReadiness("notes.txt", FileStatus.UNEXPECTED, size=10),)


@pytest.mark.parametrize("name", ["amd64/core.msi.part", "amd64/.core.msi"])
def test_a_partial_upload_in_a_role_s_folder_is_a_staging_problem(
    cpython: Profile, name: str
) -> None:
    listing = with_files(complete_listing(cpython), StagedFile(name, 5, T0))

    readiness = readiness_of(cpython, listing, listing)

    assert [f.path for f in readiness.stray] == [name]
    assert readiness.role("windows").complete


def test_a_problem_with_the_release_folder_itself_names_the_release_folder(
    cpython: Profile,
) -> None:
    folder = StagedFile("", 0, 0.0, regular=False, problem="cannot be read (Permission denied)")
    listing = with_files(complete_listing(cpython), folder)

    readiness = readiness_of(cpython, listing, listing)

    assert "staging: the release folder (cannot be read (Permission denied))" in readiness.blockers


def test_a_file_with_another_name_somewhere_is_noted_as_hard_linked(cpython: Profile) -> None:
    listing = complete_listing(cpython)
    linked = dataclasses.replace(listing["Python-3.14.1.tgz"], links=2)
    listing = with_files(listing, linked)

    readiness = readiness_of(cpython, listing, listing)

    assert readiness.hard_linked == ("Python-3.14.1.tgz",)


def test_readiness_carries_the_status_of_the_release_s_branch(cpython: Profile) -> None:
    security = cpython.with_statuses({"3.14": "security"})

    readiness = compute_readiness(security, TAG, {})

    assert readiness.branch_status == "security"
    assert [r.role for r in readiness.roles] == ["source", "docs"]


def test_a_list_of_files_names_the_first_ones_then_counts_the_rest() -> None:
    files = [FileReadiness(f"f{i}.zip", FileStatus.MISSING) for i in range(5)]

    assert described(files, limit=2) == "f0.zip (missing), f1.zip (missing), 3 more"
    assert described(files[:2], limit=2) == "f0.zip (missing), f1.zip (missing)"


# -- waivers of files -------------------------------------------------------------------------


def test_a_waived_unexpected_file_is_published_with_the_role_staging_at_the_top(
    cpython: Profile,
) -> None:
    notes, later = StagedFile("notes.txt", 10, T0), StagedFile("zz.txt", 3, T0)
    listing = with_files(complete_listing(cpython), notes, later)

    readiness = compute_readiness(
        cpython,
        TAG,
        listing,
        previous=listing,
        waivers=(Waiver("notes.txt", is_role=False, person="hugo"),),
    )

    assert FileReadiness("notes.txt", FileStatus.PRESENT, "source", False, 10) in (
        readiness.role("source").files
    )
    assert [f.path for f in readiness.stray] == ["zz.txt"]  # judged after it, still stray


def test_a_waived_required_file_staged_after_all_is_published_with_its_role(
    cpython: Profile,
) -> None:
    listing = complete_listing(cpython)
    waived = Waiver("python-3.14.1-arm64.exe", is_role=False, person="hugo")

    readiness = compute_readiness(cpython, TAG, listing, previous=listing, waivers=(waived,))

    arm64 = file_of(readiness, "python-3.14.1-arm64.exe")
    assert (arm64.status, arm64.role, arm64.required) == (FileStatus.PRESENT, "windows", False)
    assert arm64 in readiness.role("windows").present


def test_a_waived_optional_file_keeps_its_own_role(cpython: Profile) -> None:
    """Only an unexpected file takes the role of the folder it is in: the embeddable zip is
    the windows role's, though windows stages at the top after source."""
    listing = with_files(complete_listing(cpython), StagedFile("python-3.14.1-amd64.zip", 7, T0))
    waived = Waiver("python-3.14.1-amd64.zip", is_role=False, person="hugo")

    readiness = compute_readiness(cpython, TAG, listing, previous=listing, waivers=(waived,))

    assert file_of(readiness, "python-3.14.1-amd64.zip").role == "windows"


def test_a_waived_partial_upload_is_still_a_staging_problem(cpython: Profile) -> None:
    """A name uploaders use while a transfer is under way is never published, waived or not:
    the file it becomes is a new name."""
    listing = with_files(complete_listing(cpython), StagedFile("notes.txt.part", 10, T0))
    waived = Waiver("notes.txt.part", is_role=False, person="hugo")

    readiness = compute_readiness(cpython, TAG, listing, previous=listing, waivers=(waived,))

    assert [f.path for f in readiness.stray] == ["notes.txt.part"]
    assert "notes.txt.part" not in [f.path for f in readiness.role("source").files]


def test_a_waived_entry_storage_could_not_take_as_a_file_still_blocks_with_its_reason(
    cpython: Profile,
) -> None:
    folder = StagedFile("extras/", 0, 0.0, regular=False, problem="a folder that cannot be read")
    listing = with_files(complete_listing(cpython), folder)

    readiness = compute_readiness(
        cpython,
        TAG,
        listing,
        previous=listing,
        waivers=(Waiver("extras/", is_role=False, person="hugo"),),
    )

    assert "staging: extras/ (a folder that cannot be read)" in readiness.blockers


# -- files published earlier (late files) -----------------------------------------------------


def test_a_required_file_published_earlier_counts_as_delivered_by_its_role(
    cpython: Profile,
) -> None:
    listing = without(complete_listing(cpython), "python-3.14.1-arm64.exe")

    readiness = compute_readiness(
        cpython, TAG, listing, previous=listing, public={"python-3.14.1-arm64.exe"}
    )

    assert file_of(readiness, "python-3.14.1-arm64.exe") == FileReadiness(
        "python-3.14.1-arm64.exe", FileStatus.PUBLIC, "windows", True
    )


def test_an_optional_file_published_earlier_and_staged_again_blocks(cpython: Profile) -> None:
    listing = with_files(complete_listing(cpython), StagedFile("amd64/core.msi", 5, T0))

    readiness = compute_readiness(
        cpython, TAG, listing, previous=listing, public={"amd64/core.msi"}
    )

    assert "windows: amd64/core.msi (already public)" in readiness.blockers
