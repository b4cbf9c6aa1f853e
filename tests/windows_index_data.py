"""Install-manager indexes and manifests shaped like those the Windows pipeline writes
(merge-and-upload.py): ``{"versions": [...]}``, newest installs first, written compact."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

ARCHES = ("64", "32", "arm64")


def installs(version: str) -> list[dict[str, object]]:
    """The installs one release adds: one per architecture, plus free-threaded builds."""
    branch = ".".join(version.split(".")[:2])
    found: list[dict[str, object]] = []
    for flavour in ("", "t"):
        for arch in ARCHES:
            found.append(
                {
                    "id": f"pythoncore-{branch}{flavour}-{arch}",
                    "sort-version": version,
                    "company": "PythonCore",
                    "tag": f"{branch}{flavour}-{arch}",
                    "display-name": f"Python {version}",
                    "url": f"https://www.python.org/ftp/python/{version}/python-{version}-{arch}.zip",
                }
            )
    return found


def index_bytes(*versions: str) -> bytes:
    """An index holding the installs of ``versions``, the first newest."""
    entries = [i for v in versions for i in installs(v)]
    return json.dumps({"versions": entries}).encode()


def manifest_bytes(version: str) -> bytes:
    return json.dumps({"versions": installs(version)}, indent=2).encode()


def catalog_bytes(index: bytes) -> bytes:
    """A stand-in for the Authenticode catalog: it names the index's bytes."""
    return b"catalog of sha256 " + hashlib.sha256(index).hexdigest().encode()


LIVE_VERSIONS = ("3.14.0", "3.13.9", "3.13.8", "3.12.10")  # what is public before the rehearsal


def stage_windows_index(release: Path, tag: str, *versions: str) -> bytes:
    """Write ``tag``'s manifest, and an index of ``tag`` then ``versions`` with its catalog,
    into the release's staging folder ``release``; returns the index's bytes."""
    release.mkdir(parents=True, exist_ok=True)
    (release / f"windows-{tag}.json").write_bytes(manifest_bytes(tag))
    index = index_bytes(tag, *versions)
    (release / "index-windows.json").write_bytes(index)
    (release / "index-windows.json.cat").write_bytes(catalog_bytes(index))
    return index
