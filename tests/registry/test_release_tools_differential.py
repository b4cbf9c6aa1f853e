"""relbot against today's tool, on python.org's own app: ``add_to_pydotorg.py`` from the
vendored release-tools (unpatched) and relbot register the same release folders, one after
the other, and python.org must hold the same records, field by field.

``add_to_pydotorg.py`` signs files that have no Sigstore signature and verifies every one with
``python3 -m sigstore``: every file here has its bundle already, and a stand-in ``sigstore``
module on its ``PYTHONPATH`` only records what it was asked (a verification it passes).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag
from bot.http_client import RetryPolicy
from bot.pydotorg.registry import PydotorgRegistry
from tests.pythondotorg_app import (
    RELEASE_TOOLS,
    RELEASE_TOOLS_SHA256,
    PythonOrgApp,
    unpacked,
)
from tests.registry.answer_dropper import AnswerDropper
from tests.registry.python_org import RM_AUTH, PythonOrg, on_app

_STAND_IN = """\
import json, os, sys
with open(os.environ["SIGSTORE_CALLS"], "a") as calls:
    calls.write(json.dumps(sys.argv[1:]) + "\\n")
"""


@dataclass(frozen=True)
class Folder:
    """A release folder as the RM leaves it on the download server."""

    tag: str
    files: tuple[str, ...]  # names in the folder; each gets the sidecars below
    sidecars: tuple[str, ...] = (".sigstore",)
    extra: tuple[str, ...] = ()  # files without sidecars (not registered)

    @property
    def base(self) -> str:
        return str(ReleaseTag.parse(self.tag).version)


def folder_of(tag: str, profile: Profile, *, keep: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The names of what the profile expects in ``tag``'s public folder (docs live elsewhere),
    those ending with one of ``keep`` only when given."""
    parsed = ReleaseTag.parse(tag)
    names = []
    for expected in profile.expected(parsed):
        target = profile.public_target(parsed, expected.role, expected.path)
        folder, _, name = target.rpartition("/")
        if folder == str(parsed.version) and (not keep or name.endswith(keep)):
            names.append(name)
    return tuple(names)


def cases(profile: Profile) -> list[Folder]:
    return [
        Folder("3.14.1", folder_of("3.14.1", profile), (".sigstore", ".sig", ".crt")),
        Folder("3.13.5", folder_of("3.13.5", profile), extra=("python-3.13.5-amd64.zip",)),
        Folder("3.12.11", folder_of("3.12.11", profile, keep=(".tgz", ".tar.xz"))),
        Folder("3.15.0a1", folder_of("3.15.0a1", profile)),
        Folder("3.11.4", folder_of("3.11.4", profile), (".asc", ".sigstore", ".spdx.json")),
    ]


@pytest.fixture
def python_org(pythondotorg_app: PythonOrgApp) -> Iterator[PythonOrg]:
    pythondotorg_app.reset()
    with AnswerDropper(pythondotorg_app.base_url) as proxy:
        yield on_app(pythondotorg_app, proxy)


def write_folder(root: Path, case: Folder) -> PublishPlan:
    """The files of ``case`` under ``root/BASE/``, and relbot's plan of them."""
    folder = root / case.base
    folder.mkdir(parents=True)
    planned = []
    names = [*case.files, *case.extra]
    names += [name + suffix for name in case.files for suffix in case.sidecars]
    for n, name in enumerate(sorted(names)):
        data = f"{case.tag} {name}\n".encode() * (n + 1)
        (folder / name).write_bytes(data)
        sha = hashlib.sha256(data).hexdigest()
        planned.append(PlanFile(name, f"{case.base}/{name}", "source", len(data), sha))
    return PublishPlan(ReleaseTag.parse(case.tag), tuple(planned))


def add_to_pydotorg(app: PythonOrgApp, root: Path, tag: str, work: Path) -> list[list[str]]:
    """Run release-tools' add_to_pydotorg.py; the sigstore calls it made."""
    tools = unpacked(RELEASE_TOOLS, RELEASE_TOOLS_SHA256, "release-tools") / "src"
    stand_in = work / "stand-in" / "sigstore"
    stand_in.mkdir(parents=True, exist_ok=True)
    (stand_in / "__init__.py").write_text("")
    (stand_in / "__main__.py").write_text(_STAND_IN)
    calls = work / "sigstore-calls"
    calls.write_text("")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(work),
        "AUTH_INFO": RM_AUTH,
        "PYTHONPATH": str(stand_in.parent),
        "SIGSTORE_CALLS": str(calls),
    }
    script = [str(app.python), str(tools / "add_to_pydotorg.py")]
    done = subprocess.run(
        [*script, "--base-url", app.url, "--ftp-root", f"{root}/", tag],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in calls.read_text().splitlines()]


def forget(python_org: PythonOrg, release: str) -> None:
    """Delete every record of ``release`` (add_to_pydotorg.py's own first step)."""
    with python_org.v1() as client:
        answer = client.delete(
            "downloads/release_file/", params={"release": python_org.release_pk(release)}
        )
    assert answer.status_code == 204


def test_relbot_registers_what_add_to_pydotorg_registers(
    pythondotorg_app: PythonOrgApp, python_org: PythonOrg, profile: Profile, tmp_path: Path
) -> None:
    for case in cases(profile):
        release = f"Python {case.tag}"
        python_org.add_release(release)
        root = tmp_path / case.tag
        plan = write_folder(root, case)

        calls = add_to_pydotorg(pythondotorg_app, root, case.tag, tmp_path)
        theirs = python_org.records(release)
        forget(python_org, release)
        registry = PydotorgRegistry(
            python_org.url, RM_AUTH, profile, retry=RetryPolicy(attempts=2, sleep=lambda _: None)
        )
        registry.sync(plan)
        ours = python_org.records(release)

        assert theirs, case.tag
        assert sorted(ours) == sorted(theirs), case.tag
        print(f"{case.tag}: {len(theirs)} records x {len(next(iter(theirs.values())))} fields")
        for name, record in theirs.items():
            mine = {k: v for k, v in ours[name].items() if k != "resource_uri"}
            assert mine == {k: v for k, v in record.items() if k != "resource_uri"}, name
        # add_to_pydotorg.py verified each file against the RM's identity, signing none
        assert calls and all(call[:2] == ["verify", "identity"] for call in calls), case.tag
