"""Whether the files a role claimed are still the ones staged: size and mtime first, and the
content only for the files whose mtime moved and not their size."""

from __future__ import annotations

from bot.domain.files import SnapshotFile, StagedFile, changed_since, needs_digest

A = SnapshotFile("a.tgz", 10, 1.0, "a" * 64)
B = SnapshotFile("b.tgz", 20, 2.0, "b" * 64)


def staged(
    old: SnapshotFile, *, size: int = 0, mtime: float = 0.0, regular: bool = True
) -> StagedFile:
    return StagedFile(old.path, size or old.size, mtime or old.mtime, regular=regular)


def test_a_file_as_claimed_is_unchanged_and_needs_no_hashing() -> None:
    listing = {"a.tgz": staged(A), "b.tgz": staged(B)}

    assert needs_digest((A, B), listing) == []
    assert changed_since((A, B), listing, {}) == []


def test_a_file_gone_since_the_claim_is_changed_without_hashing() -> None:
    listing = {"b.tgz": staged(B)}

    assert needs_digest((A, B), listing) == []
    assert changed_since((A, B), listing, {}) == ["a.tgz"]


def test_a_file_replaced_by_a_symlink_is_changed_without_hashing() -> None:
    listing = {"a.tgz": staged(A, regular=False), "b.tgz": staged(B)}

    assert needs_digest((A, B), listing) == []
    assert changed_since((A, B), listing, {}) == ["a.tgz"]


def test_a_file_replaced_by_a_symlink_is_never_hashed_even_when_its_mtime_moved() -> None:
    listing = {"a.tgz": staged(A, mtime=3.0, regular=False), "b.tgz": staged(B)}

    assert needs_digest((A, B), listing) == []
    assert changed_since((A, B), listing, {}) == ["a.tgz"]


def test_a_file_whose_size_moved_but_not_its_mtime_is_changed_without_hashing() -> None:
    # A copy that keeps the times (rsync --times, cp -p) of a file of another length.
    listing = {"a.tgz": staged(A), "b.tgz": staged(B, size=B.size + 1)}

    assert needs_digest((A, B), listing) == []
    assert changed_since((A, B), listing, {}) == ["b.tgz"]


def test_a_file_whose_mtime_moved_is_hashed_and_changed_if_its_content_differs() -> None:
    listing = {"a.tgz": staged(A), "b.tgz": staged(B, mtime=3.0)}

    assert needs_digest((A, B), listing) == ["b.tgz"]
    assert changed_since((A, B), listing, {"b.tgz": "c" * 64}) == ["b.tgz"]
    assert changed_since((A, B), listing, {"b.tgz": B.sha256}) == []


def test_a_file_whose_size_moved_is_changed_without_hashing_whatever_its_size() -> None:
    # An uploader's 100 GB sparse file in place of a claimed one costs no read at all.
    listing = {"a.tgz": staged(A), "b.tgz": staged(B, size=100 << 30, mtime=3.0)}

    assert needs_digest((A, B), listing) == []
    assert changed_since((A, B), listing, {}) == ["b.tgz"]


def test_every_changed_file_is_named_not_only_the_first() -> None:
    listing = {"b.tgz": staged(B, mtime=3.0)}

    assert changed_since((A, B), listing, {"b.tgz": "c" * 64}) == ["a.tgz", "b.tgz"]
