"""The release manager's last step as one command, rehearsed through the console platform with
``[signatures] require = true``: stage, /ready every role, /publish (refused: unsigned, with the
line to run), run that very line (``relbot sign``, token of the private Sigstore instance),
/publish, confirm. Every file goes public with its .sigstore, .sig and .crt, and python.org's
records (the API double) name them."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.demo import stage_demo
from bot.domain.profile import load_profile
from tests.doubles.pydotorg import PydotorgDouble
from tests.signing_fixtures import RM, signed_files, sigstore_instance
from tests.sigstore_instance import SigstoreInstance

__all__ = ["sigstore_instance"]

RELBOT = Path(sys.executable).with_name("relbot")
KEY = "rehearsal-key"


@pytest.fixture
def api() -> Iterator[PydotorgDouble]:
    with PydotorgDouble(users={"rm": (KEY, True)}) as double:
        yield double


def read_until(stream: object, pattern: str, seen: list[str]) -> re.Match[str]:
    compiled = re.compile(pattern)
    for line in stream:  # type: ignore[attr-defined]
        seen.append(line)
        if match := compiled.search(line):
            return match
    raise AssertionError(f"no {pattern!r} in:\n" + "".join(seen))


def test_stage_ready_sign_publish_confirm(
    tmp_path: Path, sigstore_instance: SigstoreInstance, api: PydotorgDouble
) -> None:
    api.add_release("Python 3.14.1")
    sigstore_instance.write_trust_config(tmp_path / "sigstore-trust.json")
    (tmp_path / "relbot.toml").write_text(
        textwrap.dedent(f"""
        [signatures]
        require = true
        trusted_root = "sigstore-trust.json"

        [pydotorg]
        kind = "api"
        url = "{api.url}"
        auth_env = "RELBOT_TEST_PYDOTORG"

        [people.hugo]
        rm = ["3.14"]
        roles = ["source", "docs", "windows", "macos"]
        """)
    )
    staging = tmp_path / "relbot-data" / "staging"
    staged = stage_demo(staging, load_profile("cpython"))
    (tmp_path / "relbot-data" / "public").mkdir()  # `relbot run` creates no folder
    signed = signed_files(load_profile("cpython"), staging / "3.14.1", staged)
    env = {**os.environ, "RELBOT_TEST_PYDOTORG": f"rm:{KEY}"}
    env.pop("SIGSTORE_IDENTITY_TOKEN", None)
    bot = subprocess.Popen(
        [str(RELBOT), "run"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert bot.stdin is not None and bot.stdout is not None
    seen: list[str] = []
    try:
        for role in ("source", "docs", "windows", "macos"):
            bot.stdin.write(f"/ready {role} 3.14.1\n")
            bot.stdin.flush()
            read_until(bot.stdout, rf"{role} is ready for 3\.14\.1", seen)
        bot.stdin.write("/publish 3.14.1\n")
        bot.stdin.flush()
        refusal = read_until(bot.stdout, r"run: (relbot sign 3\.14\.1 --config \S+)", seen)

        # The RM runs exactly the line the bot gave, logged in through the instance.
        command = shlex.split(refusal.group(1))
        signing = subprocess.run(
            [str(RELBOT), *command[1:]],
            env={**env, "SIGSTORE_IDENTITY_TOKEN": sigstore_instance.token(*RM)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert signing.returncode == 0, signing.stdout + signing.stderr
        assert f"Signed {len(signed)} files of 3.14.1 as hugo@python.org:" in signing.stdout

        bot.stdin.write("/publish 3.14.1\n")
        bot.stdin.flush()
        confirm = read_until(bot.stdout, r"/publish 3\.14\.1 confirm [A-Z0-9]{6,12}", seen)
        out, err = bot.communicate(confirm.group(0) + "\n", timeout=120)
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait()
    assert bot.returncode == 0, err
    assert "Published 3.14.1" in out, "".join(seen) + out
    assert "withdrawn" not in "".join(seen) + out

    public = tmp_path / "relbot-data" / "public"
    published = {str(p.relative_to(public)) for p in public.rglob("*") if p.is_file()}
    for file in staged:
        folder = "doc/3.14.1" if file.parent.name == "docs" else "3.14.1"
        suffixes = ("", ".sigstore", ".sig", ".crt") if file in signed else ("",)
        for suffix in suffixes:
            assert f"{folder}/{file.name}{suffix}" in published, f"{folder}/{file.name}{suffix}"
    assert len(published) == len(staged) + 3 * len(signed)

    records = api.files("Python 3.14.1")
    assert len(records) == 12
    for record in records:
        url = record["url"]
        assert record["sigstore_bundle_file"] == url + ".sigstore"
        assert record["sigstore_signature_file"] == url + ".sig"
        assert record["sigstore_cert_file"] == url + ".crt"
