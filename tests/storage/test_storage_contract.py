"""The Storage contract, run against every backend on real folders (and a real sshd)."""

from __future__ import annotations

import hashlib
import os
import stat
import uuid
from pathlib import Path

import pytest

from bot.domain.tags import ReleaseTag
from bot.errors import PromotionConflict, PublishStopped, StorageError
from tests.storage.conftest import Backend, Crash, plan_for, publish

TAG = "3.14.0rc2"
RC2 = ReleaseTag.parse(TAG)

# A small prerelease: docs, installers in an MSI folder, sidecars, the index last.
RELEASE = {
    "docs/python-3.14.0rc2-docs-html.zip": "html",
    "docs/python-3.14.0rc2-docs.epub": "epub",
    "Python-3.14.0rc2.tgz": "tgz",
    "Python-3.14.0rc2.tgz.sigstore": "bundle",
    "python-3.14.0rc2-amd64.exe": "exe",
    "amd64rc2/core.msi": "msi",
    "amd64rc2/core_d.msi": "msi-debug",
    "windows-3.14.0rc2.json": "{}",
}


def stage(backend: Backend, files: dict[str, str] = RELEASE, tag: str = TAG) -> None:
    for path, content in files.items():
        backend.write(tag, path, content)


def published(files: dict[str, str] = RELEASE, tag: str = TAG) -> dict[str, bytes]:
    """Where ``files`` land in public, with their content."""
    version = ReleaseTag.parse(tag).version
    return {
        (f"doc/{tag}/{p[5:]}" if p.startswith("docs/") else f"{version}/{p}"): c.encode()
        for p, c in files.items()
    }


# -- listing ------------------------------------------------------------------------------


def test_staged_tags_are_the_release_folders(backend: Backend) -> None:
    assert backend.make().staged_tags() == []
    stage(backend)
    backend.write("3.13.9", "Python-3.13.9.tgz", "x")
    (backend.staging / "README").write_text("not a release")
    assert backend.make().staged_tags() == ["3.13.9", TAG]


def test_listing_reports_nested_folders_with_sizes(backend: Backend) -> None:
    stage(backend)
    listing = backend.make().list_staging(RC2)
    assert listing is not None
    assert set(listing) == set(RELEASE)
    for path, content in RELEASE.items():
        entry = listing[path]
        assert (entry.path, entry.size, entry.regular) == (path, len(content), True)
        assert int(entry.mtime) == int((backend.staging / TAG / path).stat().st_mtime)


def test_listing_of_a_missing_release_is_none(backend: Backend) -> None:
    assert backend.make().list_staging(RC2) is None


def test_listing_of_an_empty_release_has_no_file(backend: Backend) -> None:
    (backend.staging / TAG / "docs").mkdir(parents=True)
    listing = backend.make().list_staging(RC2)
    # The empty folder is listed (so no promotion carries it to public), never as a file.
    assert listing is not None and [p for p, f in listing.items() if f.regular] == []
    assert listing["docs/"].is_empty_folder


def test_listing_reports_a_symlink_without_following_it(backend: Backend, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not for the public")
    stage(backend, {"Python-3.14.0rc2.tgz": "tgz"})
    (backend.staging / TAG / "escape").symlink_to(outside)
    (backend.staging / TAG / "python-3.14.0rc2.exe").symlink_to(outside / "secret.txt")
    listing = backend.make().list_staging(RC2)
    assert listing is not None
    assert set(listing) == {"Python-3.14.0rc2.tgz", "escape", "python-3.14.0rc2.exe"}
    assert not listing["escape"].regular
    assert not listing["python-3.14.0rc2.exe"].regular
    assert listing["Python-3.14.0rc2.tgz"].regular


# -- digests ------------------------------------------------------------------------------


def test_digest_is_the_sha256_of_the_content(backend: Backend) -> None:
    big = os.urandom(3 * 1024 * 1024 + 17)
    stage(backend)
    backend.write(TAG, "python-3.14.0rc2-macos11.pkg", big)
    paths = [*RELEASE, "python-3.14.0rc2-macos11.pkg"]
    storage = backend.make()
    storage.list_staging(RC2)
    digests = storage.digest(RC2, paths)
    assert digests["python-3.14.0rc2-macos11.pkg"] == hashlib.sha256(big).hexdigest()
    for path, content in RELEASE.items():
        assert digests[path] == hashlib.sha256(content.encode()).hexdigest()
    assert list(digests) == paths


def test_digest_sees_a_changed_file(backend: Backend) -> None:
    file = backend.write(TAG, "Python-3.14.0rc2.tgz", "first")
    storage = backend.make()
    storage.list_staging(RC2)
    assert storage.digest(RC2, ["Python-3.14.0rc2.tgz"])["Python-3.14.0rc2.tgz"] == _sha("first")
    file.write_text("second, longer")
    os.utime(file, (1_700_000_000, 1_700_000_000))
    storage.list_staging(RC2)
    assert storage.digest(RC2, ["Python-3.14.0rc2.tgz"])["Python-3.14.0rc2.tgz"] == _sha(
        "second, longer"
    )


def test_read_returns_a_small_file_and_refuses_a_big_one(backend: Backend) -> None:
    backend.write(TAG, "Python-3.14.0rc2.tgz.sigstore", b'{"bundle": 1}')
    backend.write(TAG, "Python-3.14.0rc2.tgz", b"x" * 5000)
    storage = backend.make()
    assert storage.read(RC2, "Python-3.14.0rc2.tgz.sigstore", 100) == b'{"bundle": 1}'
    with pytest.raises(StorageError, match="larger than 4,999 bytes"):
        storage.read(RC2, "Python-3.14.0rc2.tgz", 4999)


def test_a_bundle_gone_or_reached_through_a_linked_folder_is_not_read(backend: Backend) -> None:
    """The same sentence on every backend: a bundle removed since the listing, and one in a
    folder swapped for a link to elsewhere (never followed)."""
    elsewhere = backend.public.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.sigstore").write_text("{}")
    (backend.staging / TAG).mkdir()
    (backend.staging / TAG / "sub").symlink_to(elsewhere)
    storage = backend.make()
    release = backend.staging / TAG

    with pytest.raises(StorageError) as gone:
        storage.read(RC2, "gone.sigstore", 100)
    with pytest.raises(StorageError) as linked:
        storage.read(RC2, "sub/a.sigstore", 100)

    assert str(gone.value) == f"Cannot read {release / 'gone.sigstore'}: no such file."
    assert str(linked.value) == f"Cannot read {release / 'sub/a.sigstore'}: not a regular file."


# -- promotion ----------------------------------------------------------------------------


def test_promotion_to_an_absent_public_folder_is_one_rename_of_the_bots_copies(
    backend: Backend,
) -> None:
    stage(backend)
    report = publish(backend.make(), plan_for(backend, TAG, list(RELEASE)))
    assert report.renamed == ("doc", "3.14.0")
    assert (report.moved, report.already, report.problems) == (0, 0, ())
    assert backend.public_files() == published()
    # Public holds the bot's copies; the staged originals stay until the release is public.
    assert backend.staged_files(TAG) == {p: c.encode() for p, c in RELEASE.items()}
    for path in published():
        st = (backend.public / path).stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (os.getuid(), 0o444)
    folders = [p for p in backend.public.rglob("*") if p.is_dir()]
    assert {stat.S_IMODE(p.stat().st_mode) for p in folders} == {0o755}


def test_promotion_into_an_existing_folder_leaves_other_tags_alone(backend: Backend) -> None:
    # rc1 is public already; rc2 shares 3.14.0/ and re-ships an identical file.
    rc1 = {"Python-3.14.0rc1.tgz": "rc1", "amd64rc1/core.msi": "rc1 msi", "same.txt": "same"}
    stage(backend, rc1, "3.14.0rc1")
    publish(backend.make(), plan_for(backend, "3.14.0rc1", list(rc1)))
    before = {p: (backend.public / p).stat() for p in published(rc1, "3.14.0rc1")}
    rc2 = {**RELEASE, "same.txt": "same"}
    stage(backend, rc2)
    plan = plan_for(backend, TAG, list(rc2))
    storage = backend.make()
    storage.freeze(plan)

    report = storage.promote(plan, public_before=["3.14.0/same.txt"])

    # docs go to a new folder, renamed whole; into 3.14.0/ every file is linked in one
    # batch, the new MSI folder's too (a folder renamed there would show before the batch)
    assert report.renamed == ("doc",)
    assert (report.moved, report.already) == (len(rc2) - 3, 1)  # same.txt was public
    assert report.problems == ()
    assert backend.public_files() == published(rc2) | published(rc1, "3.14.0rc1")
    for path, st in before.items():
        now = (backend.public / path).stat()
        assert (now.st_ino, now.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)


def test_promotion_refuses_to_clobber_and_moves_nothing(backend: Backend) -> None:
    (backend.public / "3.14.0").mkdir()
    (backend.public / "3.14.0" / "python-3.14.0rc2-amd64.exe").write_text("someone else's")
    stage(backend)
    with pytest.raises(PromotionConflict, match=r"python-3\.14\.0rc2-amd64\.exe"):
        publish(backend.make(), plan_for(backend, TAG, list(RELEASE)))
    assert backend.staged_files(TAG) == {p: c.encode() for p, c in RELEASE.items()}
    assert backend.public_files() == {"3.14.0/python-3.14.0rc2-amd64.exe": b"someone else's"}


def test_a_staged_file_gone_before_the_copy_is_named_and_nothing_moves(
    backend: Backend,
) -> None:
    stage(backend)
    plan = plan_for(backend, TAG, list(RELEASE))
    (backend.staging / TAG / "Python-3.14.0rc2.tgz").unlink()
    storage = backend.make()
    assert storage.freeze(plan) == ["Python-3.14.0rc2.tgz is missing"]
    with pytest.raises(PublishStopped, match=r"copy of Python-3\.14\.0rc2\.tgz is missing"):
        storage.promote(plan)
    assert backend.public_files() == {}


def test_a_staged_file_rewritten_before_the_copy_is_never_copied(backend: Backend) -> None:
    stage(backend)
    plan = plan_for(backend, TAG, list(RELEASE))
    backend.write(TAG, "Python-3.14.0rc2.tgz", "TGZ")  # same size, other bytes
    assert backend.make().freeze(plan) == ["Python-3.14.0rc2.tgz changed"]
    assert not backend.copy_of(TAG, "3.14.0/Python-3.14.0rc2.tgz").exists()
    assert backend.copy_of(TAG, "3.14.0/python-3.14.0rc2-amd64.exe").read_text() == "exe"


@pytest.mark.parametrize(
    ("public_exists", "moves_before_crash"),
    [(False, 0), (False, 1), (True, 0), (True, 3), (True, 6)],
    ids=[
        "absent-after-docs",
        "absent-after-all",
        "existing-after-docs",
        "existing-mid-batch",
        "existing-last-file",
    ],
)
def test_promotion_resumes_after_a_crash(
    backend: Backend, public_exists: bool, moves_before_crash: int
) -> None:
    if public_exists:
        (backend.public / "3.14.0").mkdir()
        (backend.public / "3.14.0" / "Python-3.14.0rc1.tgz").write_text("rc1")
    stage(backend)
    plan = plan_for(backend, TAG, list(RELEASE))
    assert backend.make().freeze(plan) == []
    with pytest.raises(Crash):  # the crash happens, or this test proves nothing
        backend.crashing(moves_before_crash).promote(plan)

    resumed = backend.make()
    assert resumed.promote(plan).problems == ()

    expected = published() | ({"3.14.0/Python-3.14.0rc1.tgz": b"rc1"} if public_exists else {})
    assert backend.public_files() == expected
    again = resumed.promote(plan)  # and once more finds everything done
    assert (again.renamed, again.moved, again.already) == ((), 0, len(plan.files))
    assert again.problems == ()


def test_names_with_spaces_and_shell_metacharacters_are_handled_safely(
    backend: Backend, tmp_path: Path
) -> None:
    marker = f"relbot-injected-{uuid.uuid4().hex}"
    names = {
        f"a b;$(touch {marker})'\"*.txt": "one",
        f"`touch {marker}` & | > <.zip": "two",
        "back\\slash.exe": "three",  # (a newline in a name is refused: test_hostile_input)
        "-rf --no-preserve-root": "four",
    }
    (backend.public / "3.14.0").mkdir()  # existing folder: the per-file batch
    stage(backend, names)
    storage = backend.make()
    listing = storage.list_staging(RC2)
    assert listing is not None and set(listing) == set(names)
    assert storage.digest(RC2, list(names)) == {p: _sha(c) for p, c in names.items()}

    report = publish(storage, plan_for(backend, TAG, list(names)))

    assert report.moved == len(names) and report.problems == ()
    assert backend.public_files() == published(names)
    for folder in (Path.home(), tmp_path, backend.staging, backend.public, Path.cwd()):
        assert not (folder / marker).exists()


def test_a_symlink_in_staging_is_reported_and_never_promoted(
    backend: Backend, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not for the public")
    stage(backend, {"Python-3.14.0rc2.tgz": "tgz", "Python-3.14.0rc2.tar.xz": "xz"})
    (backend.staging / TAG / "python-3.14.0rc2.exe").symlink_to(outside / "secret.txt")
    storage = backend.make()
    listing = storage.list_staging(RC2)
    assert listing is not None and not listing["python-3.14.0rc2.exe"].regular
    regular = [p for p, f in listing.items() if f.regular]

    report = publish(storage, plan_for(backend, TAG, regular))

    # Only planned files are copied, so the folder of copies holds exactly the plan and is
    # renamed whole; the unplanned symlink stays in staging.
    assert (report.renamed, report.moved) == (("3.14.0",), 0)
    assert backend.public_files() == published(
        {"Python-3.14.0rc2.tgz": "tgz", "Python-3.14.0rc2.tar.xz": "xz"}
    )
    assert (backend.staging / TAG / "python-3.14.0rc2.exe").is_symlink()
    assert (outside / "secret.txt").read_text() == "not for the public"


def test_check_accepts_staging_and_public_on_one_filesystem(backend: Backend) -> None:
    assert backend.make().check() == []


def test_staging_location_names_the_release_folder(backend: Backend) -> None:
    assert backend.make().staging_location(RC2) == f"{backend.staging / TAG}/"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
