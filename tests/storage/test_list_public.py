"""Listing a published release's public folders (for late files), on local folders and over
SFTP to a real sshd: every entry below each folder, keyed under the public root."""

from __future__ import annotations

import os

from tests.storage.conftest import Backend


def test_list_public_walks_each_folder_and_skips_missing_ones(backend: Backend) -> None:
    (backend.public / "3.14.1" / "amd64").mkdir(parents=True)
    (backend.public / "3.14.1" / "Python-3.14.1.tgz").write_bytes(b"source")
    (backend.public / "3.14.1" / "amd64" / "core.msi").write_bytes(b"msi!")
    (backend.public / "doc" / "3.14.1").mkdir(parents=True)
    (backend.public / "doc" / "3.14.1" / "python-3.14.1-docs.epub").write_bytes(b"epub")
    (backend.public / "3.14.0").mkdir()
    (backend.public / "3.14.0" / "other.tgz").write_bytes(b"not asked for")
    os.symlink("Python-3.14.1.tgz", backend.public / "3.14.1" / "link.tgz")

    found = backend.make().list_public(["3.14.1", "doc/3.14.1", "doc/3.99.0"])

    assert set(found) == {
        "3.14.1/Python-3.14.1.tgz",
        "3.14.1/amd64/core.msi",
        "3.14.1/link.tgz",
        "doc/3.14.1/python-3.14.1-docs.epub",
    }
    assert found["3.14.1/amd64/core.msi"].size == 4
    assert found["3.14.1/Python-3.14.1.tgz"].regular
    assert not found["3.14.1/link.tgz"].regular


def test_list_public_of_nothing_published_is_empty(backend: Backend) -> None:
    assert backend.make().list_public(["3.14.1"]) == {}
