"""Tests for one-line changes listed in issue #23 that the suite still did not notice after
the layout change (each other listed change, applied to today's code, fails a test written
for it already).

Issue #23's "O_NOFOLLOW dropped from the local small-file reader (hashing follows a symlink
swapped in after the listing)": the small-file reader (``read_small``) and staging's reader
(``_open_staged``) are covered by tests/storage/; the local filesystem's ``hash`` was not: it
could open through a symlink and nothing failed. It hashes targets that a listing found to be
regular files (a public file already there, a staged original at the tidy), so a symlink can
only reach it swapped in after that listing; the listing cannot protect it: the open must.
"""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

import pytest

from bot.storage.local_fs import LocalFs


@pytest.mark.parametrize("count", [1, 3], ids=["one-file", "a-batch"])
def test_the_local_hash_never_follows_a_symlink_swapped_in_after_the_listing(
    tmp_path: Path, count: int
) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"not a published file")
    files = [tmp_path / f"python-3.14.1-{i}.tgz" for i in range(count)]
    for f in files:
        f.write_bytes(b"release bytes")
    fs = LocalFs()
    listed = [str(f) for f in files]
    assert fs.hash(listed) == dict.fromkeys(listed, hashlib.sha256(b"release bytes").hexdigest())

    files[-1].unlink()  # after the listing: the last one becomes a link to another file
    files[-1].symlink_to(secret)

    with pytest.raises(OSError) as refused:
        fs.hash(listed)
    assert refused.value.errno == errno.ELOOP
    assert os.path.islink(files[-1])  # left as found
