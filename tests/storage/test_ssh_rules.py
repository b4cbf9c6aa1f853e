"""The few words an operator reads after "Cannot ... on SERVER:" (bot/storage/ssh.py): the
reason of a failed call, and the first line of what a failed command printed."""

from __future__ import annotations

from pathlib import Path

import paramiko
import pytest

from bot.storage.ssh import first_line, reason


def raised(op: object) -> BaseException:
    try:
        op()  # type: ignore[operator]
    except BaseException as err:  # noqa: BLE001 - the test looks at what it was
        return err
    raise AssertionError("nothing was raised")


def test_a_system_error_is_worded_by_its_strerror_without_the_path(tmp_path: Path) -> None:
    gone = raised(lambda: (tmp_path / "gone").open())

    assert reason(gone) == "No such file or directory"


def test_an_error_without_strerror_is_worded_by_its_message() -> None:
    assert reason(EOFError("connection closed during a command")) == (
        "connection closed during a command"
    )
    assert reason(OSError("Socket is closed")) == "Socket is closed"
    # paramiko ends its own sentences: the bot's message ends it once ("...: Channel closed.")
    assert reason(paramiko.SSHException("Channel closed.")) == "Channel closed"


def test_an_error_without_any_words_is_named_by_its_kind() -> None:
    assert reason(EOFError()) == "EOFError"
    assert reason(paramiko.SSHException()) == "SSHException"


def test_the_first_line_of_a_commands_output_is_kept_with_bytes_that_are_not_utf8_replaced() -> (
    None
):
    assert first_line(b"\n  sha256sum: /srv/staging/a\xffb: Permission denied\nnext\n") == (
        "sha256sum: /srv/staging/a\ufffdb: Permission denied"
    )


@pytest.mark.parametrize("output", [b"", b" \n\n\t\n"])
def test_a_command_that_printed_nothing_has_an_empty_first_line(output: bytes) -> None:
    assert first_line(output) == ""
