"""Rules of staging's small files and the public listing over SFTP (bot/storage/sftp_files.py):
a signature bundle written again with the same bytes is done, with other bytes refused, the
file already there compared without reading more than the new bytes; the temporary name
beside the file; the round trips each counts; what a folder the bot may not read, a missing
one and a crowded one give. Against the real OpenSSH server on loopback (server paths are
this machine's paths); a non-root login where permissions matter."""

from __future__ import annotations

import subprocess
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable, StorageError
from bot.storage import walk
from bot.storage.sftp import SftpStorage
from tests.sshd import SSHD, SshServer
from tests.storage.conftest import as_uploader, sftp_storage
from tests.uploader import Uploader

TAG = ReleaseTag.parse("3.14.0rc2")
BUNDLE = "Python-3.14.0rc2.tgz.sigstore"


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """Staging with the release's folder, and public."""
    staging, public = tmp_path / "staging", tmp_path / "public"
    (staging / str(TAG)).mkdir(parents=True)
    public.mkdir()
    return staging, public


@pytest.fixture
def storage(sshd: SshServer, folders: tuple[Path, Path], closing: list[SftpStorage]) -> SftpStorage:
    made = sftp_storage(sshd, *folders)
    closing.append(made)
    made.staged_tags()  # connected: the round trips counted below are the write's own
    made.requests.clear()
    return made


@pytest.fixture
def immutable() -> Iterator[list[Path]]:
    """Folders made immutable (``chattr +i``: not even root may add to them), made mutable
    again after the test."""
    made: list[Path] = []
    yield made
    for folder in made:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def freeze(folder: Path, immutable: list[Path]) -> None:
    subprocess.run(["chattr", "+i", str(folder)], check=True)
    immutable.append(folder)


# -- writing a small staged file ----------------------------------------------------------------


def test_a_write_is_one_write_and_one_link_and_a_repeat_of_the_same_bytes_is_done(
    storage: SftpStorage, folders: tuple[Path, Path]
) -> None:
    staged = folders[0] / str(TAG) / BUNDLE

    storage.write(TAG, BUNDLE, b"the bundle")
    first = dict(storage.requests)
    storage.requests.clear()
    storage.write(TAG, BUNDLE, b"the bundle")  # its first answer lost, say: done all the same
    storage.write(TAG, BUNDLE, b"the bundle")

    assert first == {"write": 1, "hardlink": 1}
    assert dict(storage.requests) == {"write": 2, "hardlink": 2, "stat": 2, "read": 2}
    assert staged.read_bytes() == b"the bundle"
    assert sorted(p.name for p in staged.parent.iterdir()) == [BUNDLE]  # no temporary left


def test_a_write_of_other_bytes_over_a_file_is_refused_and_the_file_kept(
    storage: SftpStorage, folders: tuple[Path, Path]
) -> None:
    staged = folders[0] / str(TAG) / BUNDLE
    staged.write_bytes(b"the bundle")

    with pytest.raises(StorageError) as refused:
        storage.write(TAG, BUNDLE, b"the bundle, longer")
    with pytest.raises(StorageError):
        storage.write(TAG, BUNDLE, b"the bund")  # its beginning is not the file either

    assert str(refused.value) == (f"{BUNDLE} already exists in {staged.parent}; not overwritten.")
    assert staged.read_bytes() == b"the bundle"


def test_the_file_in_the_way_is_compared_by_reading_no_more_than_the_new_bytes(
    storage: SftpStorage, folders: tuple[Path, Path]
) -> None:
    """A big file where a small bundle goes is not downloaded to tell it differs."""
    staged = folders[0] / str(TAG) / BUNDLE
    with staged.open("wb") as f:
        f.truncate(32 << 20)

    tracemalloc.start()
    try:
        with pytest.raises(StorageError, match="already exists"):
            storage.write(TAG, BUNDLE, b"the bundle")
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 4 << 20, f"{peak / 2**20:.1f} MiB held to compare 10 bytes"


def test_a_name_of_the_longest_length_is_written(
    storage: SftpStorage, folders: tuple[Path, Path]
) -> None:
    """The temporary name beside it is the bot's own short one, not derived from the name."""
    name = "a" * 255

    storage.write(TAG, name, b"the bundle")

    assert (folders[0] / str(TAG) / name).read_bytes() == b"the bundle"
    assert [p.name for p in (folders[0] / str(TAG)).iterdir()] == [name]


def test_a_name_too_long_for_the_servers_filesystem_says_why_and_leaves_nothing(
    storage: SftpStorage, folders: tuple[Path, Path]
) -> None:
    """In the server's words: OpenSSH's sftp-server reports ENAMETOOLONG as SSH2_FX_BAD_MESSAGE."""
    name = "a" * 256

    with pytest.raises(StorageError) as refused:
        storage.write(TAG, name, b"the bundle")

    staged = folders[0] / str(TAG) / name
    assert str(refused.value) == f"Cannot write {staged} on {storage.where}: Bad message."
    assert list((folders[0] / str(TAG)).iterdir()) == []


def test_a_replacing_write_into_a_folder_the_server_refuses_says_why_and_keeps_the_file(
    storage: SftpStorage, folders: tuple[Path, Path], immutable: list[Path]
) -> None:
    staged = folders[0] / str(TAG) / BUNDLE
    staged.write_bytes(b"the old bundle")
    freeze(staged.parent, immutable)

    with pytest.raises(StorageError) as refused:
        storage.write(TAG, BUNDLE, b"the new bundle", replace=True)

    assert str(refused.value) == (f"Cannot write {staged} on {storage.where}: Permission denied.")
    assert staged.read_bytes() == b"the old bundle"


@pytest.fixture
def sessions_start_in(tmp_path: Path, immutable: list[Path]) -> Iterator[SshServer]:
    """An sshd whose SFTP sessions start in a folder nobody may write into
    (``ForceCommand internal-sftp -d``), not in the login's home."""
    if not SSHD.exists():
        pytest.fail("sshd is missing", pytrace=False)
    start = tmp_path / "session-folder"
    start.mkdir()
    server = SshServer.create(
        tmp_path / "sshd", extra_config=f"ForceCommand internal-sftp -d {start}"
    )
    freeze(start, immutable)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_the_temporary_file_is_written_beside_the_file_not_where_the_session_starts(
    sessions_start_in: SshServer, folders: tuple[Path, Path], closing: list[SftpStorage]
) -> None:
    storage = sftp_storage(sessions_start_in, *folders)
    closing.append(storage)

    storage.write(TAG, BUNDLE, b"the bundle")

    assert (folders[0] / str(TAG) / BUNDLE).read_bytes() == b"the bundle"


# -- staging and public the bot may not read ----------------------------------------------------


def test_staging_the_login_may_not_read_is_named_with_the_servers_reason(
    sshd: SshServer, uploader: Uploader, shared_root: Path, closing: list[SftpStorage]
) -> None:
    staging, public = shared_root / "staging", shared_root / "public"
    staging.mkdir(mode=0o700)  # root's alone
    public.mkdir()
    storage = as_uploader(sshd, uploader, staging, public)
    closing.append(storage)

    with pytest.raises(StagingUnreachable) as refused:
        storage.staged_tags()

    assert str(refused.value) == (
        f"Cannot read staging {staging} on {storage.where}: Permission denied."
    )


def test_a_public_folder_the_login_may_not_read_is_named_with_the_servers_reason(
    sshd: SshServer, uploader: Uploader, shared_root: Path, closing: list[SftpStorage]
) -> None:
    staging, public = shared_root / "staging", shared_root / "public"
    staging.mkdir()
    (public / "3.14.0").mkdir(parents=True, mode=0o700)
    public.chmod(0o755)
    storage = as_uploader(sshd, uploader, staging, public)
    closing.append(storage)

    with pytest.raises(StagingUnreachable) as refused:
        storage.list_public(["3.14.0"])

    assert str(refused.value) == (
        f"Cannot list {public}/3.14.0 on {storage.where}: Permission denied."
    )


# -- the public listing ---------------------------------------------------------------------------


def test_a_missing_public_folder_adds_nothing_and_the_folders_after_it_are_listed(
    storage: SftpStorage, folders: tuple[Path, Path]
) -> None:
    public = folders[1]
    (public / "doc" / "3.14.0").mkdir(parents=True)
    (public / "doc" / "3.14.0" / "index.html").write_text("docs")

    found = storage.list_public(["3.14.0", "doc/3.14.0"])

    assert list(found) == ["doc/3.14.0/index.html"]


def test_a_public_folder_past_the_listing_budget_is_refused_naming_it_and_the_budget(
    storage: SftpStorage, folders: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    public = folders[1]
    (public / "3.14.0").mkdir()
    for n in range(5):
        (public / "3.14.0" / f"file-{n}").write_text("x")
    monkeypatch.setattr(walk, "MAX_ENTRIES", 3)

    with pytest.raises(StorageError) as refused:
        storage.list_public(["3.14.0"])

    assert str(refused.value) == (
        f"{public / '3.14.0'} on {storage.where} holds more than 3 files and folders, "
        "more than the bot lists."
    )
