"""The refusals a command handler raises: each carries the one-sentence reply, and its class
says which metrics label counts it."""

from __future__ import annotations

from bot.errors import RelbotError


class Refusal(RelbotError):
    """A command that cannot be carried out; the message is the one-sentence reply."""


class NotAllowed(Refusal):
    """The person lacks the role or the RM rights the command needs."""


class CodeRefused(Refusal):
    """A confirmation code that is wrong, spent, expired or issued to someone else."""


def refusal_reason(err: Refusal) -> str:
    """The metrics label of a refusal (one of ``bot.metrics.REFUSAL_REASONS``)."""
    if isinstance(err, NotAllowed):
        return "not_allowed"
    return "code" if isinstance(err, CodeRefused) else "rule"


def refuse_unless(reason: str | None, kind: type[Refusal] = NotAllowed) -> None:
    """Raise ``kind(reason)`` when a rule of the domain gave a reason to refuse."""
    if reason is not None:
        raise kind(reason)
