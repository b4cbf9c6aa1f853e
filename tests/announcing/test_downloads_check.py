"""Checking the published files over their public URLs, against a site that serves what is
really in the public folder."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import DownloadsError
from bot.http_client import RetryPolicy
from bot.pydotorg.downloads import DownloadsCheck
from tests.doubles.downloads import PublicSite

FAST = RetryPolicy(attempts=2, backoff=0.0, sleep=lambda _: None)
TAG = ReleaseTag.parse("3.14.1")
FILES = {
    "3.14.1/Python-3.14.1.tgz": b"source tarball " * 5000,
    "3.14.1/Python-3.14.1.tgz.sigstore": b'{"bundle": "for the tarball"}',
    "doc/3.14.1/python-3.14.1-docs.epub": b"the docs",
    "3.14.1/amd64/core.msi": b"an msi",
}


@pytest.fixture
def public(tmp_path: Path) -> Path:
    for target, data in FILES.items():
        (tmp_path / target).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / target).write_bytes(data)
    return tmp_path


@pytest.fixture
def site(public: Path) -> Iterator[PublicSite]:
    with PublicSite(public) as served:
        yield served


def plan() -> PublishPlan:
    files = tuple(
        PlanFile(target, target, "source", len(data), hashlib.sha256(data).hexdigest())
        for target, data in FILES.items()
    )
    return PublishPlan(TAG, files)


def test_every_published_file_is_fetched_and_matches(site: PublicSite) -> None:
    report = DownloadsCheck(site.url, retry=FAST).verify(plan())

    assert (report.files, report.bundles) == (4, 1)
    assert sorted(site.paths) == sorted(f"/{target}" for target in FILES)


def test_a_changed_byte_is_caught_and_named(site: PublicSite, public: Path) -> None:
    tarball = public / "3.14.1/Python-3.14.1.tgz"
    data = bytearray(tarball.read_bytes())
    data[1000] ^= 1  # same size, one bit off
    tarball.write_bytes(bytes(data))

    with pytest.raises(DownloadsError) as caught:
        DownloadsCheck(site.url, retry=FAST).verify(plan())

    assert "3.14.1/Python-3.14.1.tgz has other bytes" in str(caught.value)
    assert "sigstore" not in str(caught.value)  # the others match


def test_a_missing_or_shorter_file_or_bundle_is_caught(site: PublicSite, public: Path) -> None:
    (public / "3.14.1/Python-3.14.1.tgz.sigstore").unlink()
    (public / "doc/3.14.1/python-3.14.1-docs.epub").write_bytes(b"the doc")

    with pytest.raises(DownloadsError) as caught:
        DownloadsCheck(site.url, retry=FAST).verify(plan())

    assert "3.14.1/Python-3.14.1.tgz.sigstore answered HTTP 404" in str(caught.value)
    assert "doc/3.14.1/python-3.14.1-docs.epub is 7 bytes, not 8" in str(caught.value)


def test_a_site_that_cannot_be_reached_is_a_sentence() -> None:
    with pytest.raises(DownloadsError, match="could not be fetched"):
        DownloadsCheck("http://127.0.0.1:9/", retry=FAST).verify(plan())
