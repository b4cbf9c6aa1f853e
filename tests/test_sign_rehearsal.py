"""The release manager's last step as one line in chat, rehearsed through the console platform
with ``[signatures] require = true``: stage, /ready every role, /publish (the plan offers a
Sigstore login link), log in, and type the confirm line with the login page's code. Every file
goes public with its .sigstore, .sig and .crt, python.org's records (the API double) name them,
and the release is announced. The terminal way (``relbot sign``, then /publish) still works."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import urllib.request
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


def start_bot(
    tmp_path: Path, sigstore: SigstoreInstance, api: PydotorgDouble
) -> tuple[subprocess.Popen[str], list[Path], list[Path], dict[str, str]]:
    """``relbot run`` on the console, with the demo's files staged and a signing config."""
    api.add_release("Python 3.14.1")
    sigstore.write_trust_config(tmp_path / "sigstore-trust.json")
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
    return bot, staged, signed, env


def type_line(bot: subprocess.Popen[str], line: str) -> None:
    assert bot.stdin is not None
    bot.stdin.write(line + "\n")
    bot.stdin.flush()


def assert_published_signed_and_registered(
    tmp_path: Path, staged: list[Path], signed: list[Path], api: PydotorgDouble
) -> None:
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


def test_all_ready_then_one_confirm_line_publishes_signed_registered_and_announced(
    tmp_path: Path, sigstore_instance: SigstoreInstance, api: PydotorgDouble
) -> None:
    bot, staged, signed, _ = start_bot(tmp_path, sigstore_instance, api)
    assert bot.stdout is not None
    seen: list[str] = []
    try:
        for role in ("source", "docs", "windows", "macos"):
            type_line(bot, f"/ready {role} 3.14.1")
            read_until(bot.stdout, rf"{role} is ready for 3\.14\.1", seen)
        type_line(bot, "/publish 3.14.1")
        link = read_until(bot.stdout, r"Log in as hugo@python\.org: (\S+)", seen).group(1)
        confirm = read_until(bot.stdout, r"/publish 3\.14\.1 confirm [A-Z0-9]{6,12}", seen)
        # The RM opens the link in any browser, logs in, and copies the code it shows.
        with urllib.request.urlopen(link, timeout=10) as page:
            login = page.read().decode().strip()
        out, err = bot.communicate(f"{confirm.group(0)} {login}\n", timeout=180)
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait()
    assert bot.returncode == 0, err
    transcript = "".join(seen) + out
    assert f"Published 3.14.1: {len(staged) + 3 * len(signed)} files are public." in out, transcript
    assert "3.14.1 is published:" in out  # the announcement
    assert login not in transcript + err
    assert_published_signed_and_registered(tmp_path, staged, signed, api)


def test_stage_ready_sign_publish_confirm(
    tmp_path: Path, sigstore_instance: SigstoreInstance, api: PydotorgDouble
) -> None:
    """The terminal way: the plan offers a login, the RM signs with ``relbot sign`` instead;
    the next plan needs no login."""
    bot, staged, signed, env = start_bot(tmp_path, sigstore_instance, api)
    assert bot.stdout is not None
    seen: list[str] = []
    try:
        for role in ("source", "docs", "windows", "macos"):
            type_line(bot, f"/ready {role} 3.14.1")
            read_until(bot.stdout, rf"{role} is ready for 3\.14\.1", seen)
        type_line(bot, "/publish 3.14.1")
        read_until(bot.stdout, r"Log in as hugo@python\.org: ", seen)

        # The RM signs in a terminal, logged in through the instance.
        signing = subprocess.run(
            [str(RELBOT), "sign", "3.14.1", "--config", str(tmp_path / "relbot.toml")],
            env={**env, "SIGSTORE_IDENTITY_TOKEN": sigstore_instance.token(*RM)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert signing.returncode == 0, signing.stdout + signing.stderr
        assert f"Signed {len(signed)} files of 3.14.1 as hugo@python.org:" in signing.stdout

        type_line(bot, "/publish 3.14.1")
        confirm = read_until(bot.stdout, r"/publish 3\.14\.1 confirm [A-Z0-9]{6,12}$", seen)
        out, err = bot.communicate(confirm.group(0) + "\n", timeout=120)
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait()
    assert bot.returncode == 0, err
    assert "Published 3.14.1" in out, "".join(seen) + out
    assert "withdrawn" not in "".join(seen) + out
    assert_published_signed_and_registered(tmp_path, staged, signed, api)


def test_the_log_stopping_mid_signing_leaves_nothing_public_in_a_console_rehearsal(
    tmp_path: Path, api: PydotorgDouble
) -> None:
    with SigstoreInstance() as instance:
        bot, staged, _, _ = start_bot(tmp_path, instance, api)
        assert bot.stdout is not None
        seen: list[str] = []
        try:
            for role in ("source", "docs", "windows", "macos"):
                type_line(bot, f"/ready {role} 3.14.1")
                read_until(bot.stdout, rf"{role} is ready for 3\.14\.1", seen)
            type_line(bot, "/publish 3.14.1")
            link = read_until(bot.stdout, r"Log in as hugo@python\.org: (\S+)", seen).group(1)
            confirm = read_until(bot.stdout, r"/publish 3\.14\.1 confirm [A-Z0-9]{6,12}", seen)
            with urllib.request.urlopen(link, timeout=10) as page:
                login = page.read().decode().strip()
            instance.stop_log_after(2)  # the bot's signing loses the log part-way
            out, err = bot.communicate(f"{confirm.group(0)} {login}\n", timeout=180)
        finally:
            if bot.poll() is None:
                bot.kill()
                bot.wait()
        assert not instance.log_is_up
    assert bot.returncode == 0, err
    assert "Publishing 3.14.1 was called off before anything became public" in out, out
    public = tmp_path / "relbot-data" / "public"
    assert not [p for p in public.rglob("*") if p.is_file()]
    staging = tmp_path / "relbot-data" / "staging" / "3.14.1"
    assert sorted(p.name for p in staging.rglob("*") if p.is_file()) == sorted(
        p.name for p in staged
    )
    assert api.files("Python 3.14.1") == []
