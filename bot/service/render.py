"""Plain-text rendering of readiness, plans and help: the console's output, and the text
fallback that richer platforms send along with their blocks and embeds."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bot.domain.commands import USAGE
from bot.domain.history import Event, EventKind, ReleaseState
from bot.domain.plan import PublishPlan
from bot.domain.readiness import NAMED, FileStatus, Readiness, RoleReadiness, described
from bot.domain.release_cycle import SOURCE_ONLY
from bot.domain.signing import SignatureStatus
from bot.domain.text import shown
from bot.domain.text import size_text as size_text  # the domain's; every renderer's too

HELP_LINES = {
    "ready": "say your ROLE's files for TAG are staged and final (checked now)",
    "unready": "withdraw that claim",
    "status": "what is ready, missing or blocking, for TAG or every open release",
    "hold": "block publishing until /unhold TAG",
    "unhold": "lift a hold (the holder or the release manager)",
    "publish": "release manager: see the plan, then confirm with the code it gives "
    "(upper or lower case)",
    "respin": "release manager: withdraw every claim and pending confirmation of TAG",
    "waive": "release manager: for TAG only, a file that will not come, an extra file to "
    "publish, or a role that needs no /ready",
    "unwaive": "release manager: undo that waiver",
    "abort": "release manager: cancel a confirmed publish that has made nothing public yet",
    "announce": "release manager: the forum announcement the publish posts; with TEXT, "
    "your own words in it",
    "help": "this list, or one command's",
}


def help_text(roles: tuple[str, ...], topic: str | None = None) -> str:
    """Every command with an example, or only ``topic`` (a verb of the grammar)."""
    if topic is not None:
        usage, example = USAGE[topic]
        text = f"{usage}: {HELP_LINES[topic]}; e.g. {example}"
        return text + (f" (ROLE is one of {', '.join(roles)})" if "ROLE" in usage else "")
    lines = ["relbot commands (ROLE is one of " + ", ".join(roles) + "):"]
    for verb, (usage, example) in USAGE.items():
        lines.append(f"  {usage:<48} {HELP_LINES[verb]}; e.g. {example}")
    return "\n".join(lines)


def count(n: int, noun: str) -> str:
    """``1 file``, ``7 files``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))


def role_line(role: RoleReadiness, tag: str) -> tuple[str, str]:
    """(status word, detail) for one role of the summary."""
    if role.excused and role.waiver is not None:
        return "waived", f"by {role.waiver.person}" + (
            f": {role.waiver.reason}" if role.waiver.reason else ""
        )
    required = [f for f in role.files if f.required]
    if role.already_public:
        return "public", f"{count(len(role.files), 'file')} published earlier"
    if role.problems:
        detail = described(role.problems)
        return "incomplete", f"{len(role.problems)} of {len(required)} files not ready: {detail}"
    size = size_text(sum(f.size or 0 for f in role.present))
    if role.claim is not None:
        return "ready", f"{role.claim.person}, {count(len(role.present), 'file')}, {size}"
    detail = f"{count(len(role.present), 'file')}, {size}; waiting for /ready {role.role} {tag}"
    if role.withdrawal is not None:
        return "withdrawn", f"{role.withdrawal.reason}; {detail}"
    return "complete", detail


def summary_text(readiness: Readiness, state: ReleaseState) -> str:
    tag = str(readiness.tag)
    total = len(readiness.roles)
    ready = sum(1 for r in readiness.roles if r.claim is not None and r.complete)
    if state.is_published and state.published_at is not None:
        head = f"{tag}: published by {state.published_by} at {when(state.published_at)}."
        if not _late_files(readiness):
            return head
        if state.publishing is not None:
            head += f" Late files: publishing now (confirmed by {state.publisher})"
        elif readiness.publishable:
            head += f" Late files ready to add (RM: /publish {tag})"
        else:
            head += " Late files staged; not publishable yet"
    elif state.publishing is not None:
        head = f"{tag}: publishing now (confirmed by {state.publisher})"
    elif readiness.publishable:
        head = f"{tag}: all {total} roles ready; publishable (RM: /publish {tag})"
    else:
        head = f"{tag}: {ready} of {total} roles ready; not publishable yet" + _blocker(readiness)
    lines = [head]
    for role in readiness.roles:
        word, detail = role_line(role, tag)
        lines.append(f"  {role.role:<8} {word:<10} {detail}")
    # Named up to a few, then counted: a summary stays one screen whatever staging holds.
    lines += [f"  staging: {f.describe()}" for f in readiness.stray[:NAMED]]
    if len(readiness.stray) > NAMED:
        strays = len(readiness.stray) - NAMED
        lines.append(f"  staging: {strays} more unexpected entries, not named here")
    lines += [f"  note: {hard_link_note(path)}" for path in readiness.hard_linked[:NAMED]]
    if len(readiness.hard_linked) > NAMED:
        linked = len(readiness.hard_linked) - NAMED
        lines.append(f"  note: {linked} more files with another name, not named here")
    lines += [
        f"  on hold by {h.person}" + (f": {shown(h.reason)}" if h.reason else "")
        for h in readiness.holds
    ]
    if readiness.install_index is not None:
        lines.append(f"  Windows index: {readiness.install_index.describe()}")
    if readiness.signatures:
        valid = len(readiness.signatures) - len(readiness.unsigned)
        rule = "required" if readiness.signatures_required else "not required"
        lines.append(
            f"  signatures: {valid} of {len(readiness.signatures)} files signed and valid ({rule})"
        )
        problems = readiness.signature_problems
        lines += [f"    {s.describe()}" for s in problems if s.status is SignatureStatus.INVALID]
        missing = [s.path for s in problems if s.status is SignatureStatus.MISSING]
        if missing:  # one line, a few names
            more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
            later = " (the RM signs them at /publish)" if readiness.signatures_required else ""
            lines.append(f"    unsigned: {', '.join(missing[:3])}{more}{later}")
    lines += [f"  waived: {w.describe()}" for w in readiness.waivers if not w.is_role]
    if readiness.branch_status is not None:
        lines.append("  " + branch_line(readiness.tag.branch, readiness.branch_status))
    return "\n".join(lines)


def _blocker(readiness: Readiness) -> str:
    """``: staging: notes.txt (unexpected)`` when the roles are not what blocks (the count of
    ready roles already says that), so the headline names it; else empty."""
    blockers = readiness.blockers
    by_roles = tuple(f"{role.role}: " for role in readiness.roles)
    if not blockers or any(b.startswith(by_roles) for b in blockers):
        return ""
    more = f" (and {len(blockers) - 1} more)" if len(blockers) > 1 else ""
    return f": {blockers[0]}{more}"


def _late_files(readiness: Readiness) -> bool:
    """Whether anything is staged (for a published release: files to add)."""
    staged = (FileStatus.PUBLIC, FileStatus.MISSING)
    return bool(readiness.stray) or any(
        f.status not in staged for role in readiness.roles for f in role.files
    )


def branch_line(branch: str, status: str) -> str:
    """``branch 3.12: security (source and docs only)``."""
    only = " (source and docs only)" if status in SOURCE_ONLY else ""
    return f"branch {branch}: {status}{only}"


def plan_text(plan: PublishPlan, minutes: int, code_line: str, notes: Sequence[str] = ()) -> str:
    """The plan as text; ``notes`` (what follows the registration) come before the line to
    type."""
    lines = [f"Publish plan for {plan.tag}: {len(plan.files)} files, {size_text(plan.total_size)}."]
    for role, files in plan.by_role().items():
        folders = sorted({f.target.rsplit("/", 1)[0] + "/" for f in files if "/" in f.target})
        folders += [f.target for f in files if "/" not in f.target]  # at the public root
        lines.append(f"  {role:<8} {count(len(files), 'file'):<9} -> {', '.join(folders)}")
    lines += [f"  waived: {waiver}" for waiver in plan.waivers]
    lines.append(
        "Every file becomes public together (one rename into a new folder, otherwise one "
        "millisecond batch), then the release is registered and announced."
    )
    if plan.replacements:
        replaced = " then ".join(f.target for f in plan.replacements)
        lines.append(
            f"Once the release's other files are public, and before it is registered: "
            f"{replaced} replace the live ones, each by one atomic rename, only if the live "
            "ones are still as this plan saw them."
        )
    if plan.replacements and plan.index_shared_with:
        shared = ", ".join(plan.index_shared_with)
        lines.append(
            f"The index also lists {shared}: it goes live with the last of them to publish, "
            f"so not with {plan.tag} unless the files of {shared} are public by then."
        )
    lines += notes
    lines.append(f"To publish, type within {count(minutes, 'minute')}: {code_line}")
    return "\n".join(lines)


def audit_line(event: Event) -> str:
    """One line of ``relbot audit``: when, who, what."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(event.at))
    line = f"{stamp}  {event.actor:<10} {event.kind.value:<13} {_event_detail(event)}".rstrip()
    return shown(line)  # what people typed is recorded as typed, shown escaped


def hard_link_note(path: str) -> str:
    """The summary's note on a staged file that has another name (a hard link)."""
    return (
        f"{shown(path)} has another name (a hard link), possibly outside staging; a change "
        "made through that name changes the staged file"
    )


def _event_detail(event: Event) -> str:
    data = event.data
    match event.kind:
        case EventKind.CLAIMED:
            return f"{data['role']}: {count(len(data['snapshot']), 'file')}"
        case EventKind.WITHDRAWN:
            return f"{data['role']}: {data['reason']}"
        case EventKind.HELD:
            return str(data.get("reason", ""))
        case EventKind.UNHELD:
            return f"hold of {data['holder']}"
        case EventKind.PLANNED:
            files = data["plan"]["files"]
            return f"{len(files)} files, plan {data['plan']['digest'][:12]}, code valid until " + (
                time.strftime("%H:%M:%SZ", time.gmtime(float(data["expires_at"])))
            )
        case EventKind.CONFIRMED:
            left = data.get("left_out") or []
            finishing = f", finishing without {', '.join(left)}" if left else ""
            finishing = finishing or (", finishing" if data.get("finishing") else "")
            return f"plan {str(data['digest'])[:12]}{finishing}"
        case EventKind.SIGNED:
            return f"{count(int(data['signed']), 'file')} signed as {data['identity']}"
        case EventKind.STEP_STARTED:
            return str(data["step"])
        case EventKind.STEP_DONE:
            return f"{data['step']}: {data.get('detail', '')}"
        case EventKind.PUBLISHED:
            return f"{data['files']} files, {size_text(int(data['size']))}"
        case EventKind.REFUSED:
            return f"{data['command']!r}: {data['reason']}"
        case EventKind.WAIVED:
            return str(data["target"]) + (f": {data['reason']}" if data.get("reason") else "")
        case EventKind.UNWAIVED:
            return str(data["target"])
        case EventKind.ANNOUNCEMENT_WORDS:
            words = " ".join(str(data["words"]).split())
            return f"{count(len(str(data['words'])), 'character')}: " + (
                words if len(words) <= 60 else words[:59] + "…"
            )
        case _:
            return str(data.get("reason", ""))


def event_detail(event: Event) -> str:
    """What one event did, in words (the last column of ``relbot audit``; never a code)."""
    return _event_detail(event)
