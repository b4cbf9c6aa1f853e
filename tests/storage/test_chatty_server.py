"""A server that prints a greeting before every command it runs (a login script's echo, a
ForceCommand wrapper's banner: a common setup). SFTP still works; what the bot runs over exec
has a line more than it asked for, and nothing is taken from that output blindly."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from tests.sshd import SshServer
from tests.storage.conftest import (
    plan_for,
    publish,
    serve,
    sftp_storage,
    staged_release,
    staging_and_public,
)

GREETING = "Welcome to the release server"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"  # Debian's openssh-server
TAG = "3.14.0"
FILES = ["Python-3.14.0.tgz", "python-3.14.0-amd64.exe"]


def wrapped(root: Path, script: str) -> Iterator[SshServer]:
    """An sshd that runs every command through a shell wrapper (``ForceCommand``): SFTP
    goes to the real SFTP server, then ``script`` (the command is in
    ``$SSH_ORIGINAL_COMMAND``)."""
    wrapper = root / "wrapper"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'if [ "$SSH_ORIGINAL_COMMAND" = internal-sftp ]; then exec {SFTP_SERVER}; fi\n'
        f"{script}\n"
    )
    wrapper.chmod(0o755)
    yield from serve(root / "sshd", f"ForceCommand {wrapper}")


@pytest.fixture(scope="module")
def chatty_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    yield from wrapped(
        tmp_path_factory.mktemp("sshd-chatty"),
        f"echo '{GREETING}'\nexec /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"",
    )


def checked(server: SshServer, tmp_path: Path) -> tuple[str, list[str]]:
    """``relbot check``'s problems with a storage on ``server``, and how it names the server."""
    staging, public = staging_and_public(tmp_path)
    storage = sftp_storage(server, staging, public)
    try:
        return storage.where, storage.check()
    finally:
        storage.close()


def test_the_check_names_the_greeting_and_what_it_costs(
    chatty_sshd: SshServer, tmp_path: Path
) -> None:
    where, problems = checked(chatty_sshd, tmp_path)

    assert problems == [
        f"storage: {where} prints '{GREETING}' with the output of every command root "
        "runs, so the bot cannot read what its commands answer and uses none: SHA-256 digests "
        "fall back to downloading each file, the bot's copies of a release go through this "
        "machine, files move one at a time and the group cannot be set; remove that greeting "
        "(a login script's echo, a ForceCommand wrapper's banner) so hashing, copies and moves "
        "happen on the server."
    ]


def test_a_release_is_still_published_whole_through_sftp_alone(
    chatty_sshd: SshServer, tmp_path: Path
) -> None:
    team = staged_release(tmp_path, TAG, FILES)
    staging, public = team.staging, team.public
    plan = plan_for(team, TAG, FILES)
    storage = sftp_storage(chatty_sshd, staging, public)
    try:
        assert storage.digest(ReleaseTag.parse(TAG), FILES) == {
            f.path: f.sha256 for f in plan.files
        }
        report = publish(storage, plan)
        with pytest.raises(StorageError, match="runs no commands"):  # staging stays
            storage.tidy(plan)
    finally:
        storage.close()

    assert report.problems == ()
    assert team.public_files() == {
        f"3.14.0/{path}": f"content of {path}".encode() for path in FILES
    }
    assert set(team.staged_files(TAG)) == set(FILES)  # no command to remove them safely


@pytest.fixture
def one_session_sshd(tmp_path: Path) -> Iterator[SshServer]:
    """A server that allows one session per connection (``MaxSessions 1``): the bot's SFTP
    session takes it, and every command's channel is refused."""
    yield from serve(tmp_path / "sshd", "MaxSessions 1")


def test_a_server_that_refuses_a_second_session_is_used_over_sftp_alone(
    one_session_sshd: SshServer, tmp_path: Path
) -> None:
    """Its refusal of the command channel is an answer, not a lost connection: the bot
    hashes by download, keeps the connection, and does not ask again on it."""
    names = ["Python-3.14.1.tgz", "Python-3.14.1.tar.xz"]
    team = staged_release(tmp_path, "3.14.1", names)
    storage = sftp_storage(one_session_sshd, team.staging, team.public)
    try:
        digests = [storage.digest(ReleaseTag.parse("3.14.1"), [name]) for name in names]
        counts = dict(storage.requests)
    finally:
        storage.close()

    assert digests == [
        {name: hashlib.sha256(f"content of {name}".encode()).hexdigest()} for name in names
    ]
    assert counts["connect"] == 1 and counts["download"] == 2 and "hash" not in counts
    assert counts["exec"] == 1  # the one refused probe


@pytest.fixture
def farewell_sshd(tmp_path: Path) -> Iterator[SshServer]:
    """A server whose wrapper says goodbye after every command, in Latin-1 (a logout
    script's echo on an old system)."""
    yield from wrapped(
        tmp_path, "/bin/sh -c \"$SSH_ORIGINAL_COMMAND\"\nprintf 'Sch\\366n, bis bald\\n'"
    )


def test_a_farewell_after_each_command_is_named_too_even_in_latin_1(
    farewell_sshd: SshServer, tmp_path: Path
) -> None:
    where, problems = checked(farewell_sshd, tmp_path)

    assert len(problems) == 1
    assert problems[0].startswith(
        f"storage: {where} prints 'Sch\ufffdn, bis bald' with the output of every "
        "command root runs, so the bot cannot read what its commands answer"
    )
