"""Rules for a confirmed publish pinned to its plan: which commands a publish in progress
still accepts, and which public folders two publishes must not promote into at once."""

from __future__ import annotations

from bot.domain import commands as cmd
from bot.domain.plan import PublishPlan
from bot.domain.tags import ReleaseTag

# While a confirmed publish is not finished (running, or stuck on a failed step), people can
# still look (/status, /help), pause it (/hold keeps it from resuming), lift that, and cancel
# it while nothing is public (/abort), and the RM can read the announcement it posts
# (/announce refuses to change it). Anything that changes claims or plans waits.
ALLOWED_WHILE_PUBLISHING = (cmd.Hold, cmd.Unhold, cmd.Abort, cmd.Announce)


def busy_refusal(tag: ReleaseTag, trouble: str) -> str:
    """The one sentence refusing a command while ``tag`` is being published."""
    why = f" ({trouble.rstrip('.')})" if trouble else ""
    return (
        f"{tag} is being published right now{why}; wait for the announcement, or "
        f"/hold {tag} to pause it, or /abort {tag} to cancel it while nothing is public."
    )


def public_folders(plan: PublishPlan) -> list[str]:
    """The public folders the plan promotes into (``3.14.0``, ``doc/3.14.0rc1``), sorted so
    locks on them are always taken in one order."""
    folders = set()
    for f in plan.files:
        parts = f.target.split("/")
        folders.add("/".join(parts[:2]) if parts[0] == "doc" and len(parts) > 2 else parts[0])
    return sorted(folders)
