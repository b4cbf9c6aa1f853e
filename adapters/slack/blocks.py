"""Block Kit: the gate's messages as Slack renders them (the readiness summary, the answers
to commands, the publish plan with its button, the login dialog of a plan that signs).

Everything here is a pure function of what the gate says: no Slack SDK, no I/O. Each piece is
cut to Slack's limits, and every text from outside (a file name, a reason) is escaped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bot.domain.plan import PublishPlan
from bot.domain.readiness import Readiness, RoleReadiness
from bot.ports.messages import ChannelKind, ChannelMessage, ConfirmPrompt, Reply, Tone
from bot.service.render import count, role_line, size_text, when

PUBLISH_ACTION = "relbot_publish"
LOGIN_VIEW = "relbot_login"  # the modal asking for the Sigstore login page's code
LOGIN_INPUT = "login"  # its input's block_id and action_id


# Block Kit limits (https://api.slack.com/reference/block-kit): a message may hold 50 blocks,
# a section 3000 characters, a header 150, a button value 2000, a confirm dialog's text 300.
MAX_BLOCKS = 50
MAX_SECTION = 3000
MAX_HEADER = 150
MAX_BUTTON_VALUE = 2000
MAX_DIALOG_TEXT = 300
MAX_MODAL_TITLE = 24  # a modal's title, submit and close labels
MAX_METADATA = 3000  # a modal's private_metadata
MAX_TEXT = 3000  # the notification fallback sent with blocks; Slack truncates past 40 000
MAX_LISTED = 12  # files named per list before "…and N more"
# What the gate may answer in one reply (``Gate.handle``'s ``room``): one code-block section,
# and the whole of the notification text.
REPLY_ROOM = MAX_SECTION - len("``````")

ROLE_ICONS = {
    "ready": "✅",
    "complete": "⏳",
    "incomplete": "❌",
    "withdrawn": "↩️",
    "waived": "💤",
    "public": "📦",
}

Block = dict[str, Any]


def channel_payload(
    message: ChannelMessage, people: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``text`` (and ``blocks`` for the summary) of a channel message. The people it calls
    on are mentioned by Slack user ID (``people``: person → ID), so Slack notifies them; one
    without an ID is named."""
    if message.kind is ChannelKind.SUMMARY:
        return {
            "text": _clip(escape(message.text), MAX_TEXT),
            "blocks": summary_blocks(message.text, message.readiness),
        }
    return {"text": mentions(message.mentions, people or {}) + escape(message.text)}


def mentions(persons: Sequence[str], people: Mapping[str, str]) -> str:
    """``<@U01ABCDEF> `` per person: Slack's mention markup, which notifies them."""
    return "".join(f"<@{escape(people[p])}> " if p in people else f"{escape(p)} " for p in persons)


def summary_blocks(text: str, readiness: Readiness | None) -> list[Block]:
    """The readiness summary: a header, one section per role, then stray files, holds,
    signatures and other blockers. ``text`` is the plain summary; its first line is the
    headline (it says whether the release is publishable, publishing or published). A
    published release comes without readiness: the headline says it all."""
    lines = text.splitlines() or [""]
    blocks: list[Block] = [_header(lines[0])]
    if readiness is None:
        return blocks
    tag = str(readiness.tag)
    blocks += [section(_role_text(role, tag)) for role in readiness.roles]
    if readiness.stray:
        files = [f"`{escape(f.path)}` ({f.status.value})" for f in readiness.stray]
        blocks.append(section(_listing("🚫 *Unexpected in staging* (blocks publishing):", files)))
    if readiness.holds:
        holds = [
            f"{escape(h.person)} since {when(h.at)}" + (f": {escape(h.reason)}" if h.reason else "")
            for h in readiness.holds
        ]
        blocks.append(section(_listing("🛑 *On hold*", holds)))
    if readiness.signatures:
        valid = len(readiness.signatures) - len(readiness.unsigned)
        rule = "required" if readiness.signatures_required else "not required"
        head = (
            f"🔏 *Signatures*: {valid} of {count(len(readiness.signatures), 'file')} signed "
            f"and valid ({rule})"
        )
        bad = [
            f"`{escape(s.path)}`: {escape(s.reason or s.status.value)}"
            for s in readiness.signature_problems
        ]
        blocks.append(section(_listing(head, bad) if bad else head))
    return _fit(blocks)


def reply_payload(reply: Reply) -> dict[str, Any]:
    """``text`` and ``blocks`` of the answer to one command (the plan gets its button)."""
    if reply.plan is not None and reply.confirm is not None:
        return {
            "text": _clip(escape(reply.text), MAX_TEXT),
            "blocks": plan_blocks(reply.plan, reply.confirm, reply.text, reply.notes),
        }
    if reply.summaries and not reply.private:  # /status: the summary's Block Kit
        return {"text": _clip(escape(reply.text), MAX_TEXT), "blocks": status_blocks(reply)}
    icon = {Tone.REFUSAL: "❌ ", Tone.SUCCESS: "✅ "}.get(reply.tone, "")
    lines = reply.text.splitlines() or [""]
    if len(lines) == 1:
        blocks = [section(icon + escape(lines[0]))]
    else:  # /status and /help: aligned columns, kept aligned in a code block
        blocks = [section(f"```{chunk}```") for chunk in _chunks(escape(reply.text))]
    return {"text": _clip(escape(reply.text), MAX_TEXT), "blocks": _fit(blocks)}


def status_blocks(reply: Reply) -> list[Block]:
    """The answer to ``/status``: each release as its channel summary shows it, divided."""
    blocks: list[Block] = []
    for message in reply.summaries:
        if blocks:
            blocks.append({"type": "divider"})
        if message.kind is ChannelKind.SUMMARY:
            blocks += summary_blocks(message.text, message.readiness)
        else:  # nothing staged yet: a sentence, not a summary
            blocks.append(section(escape(message.text)))
    return _fit(blocks)


def plan_blocks(
    plan: PublishPlan, prompt: ConfirmPrompt, text: str, notes: Sequence[str] = ()
) -> list[Block]:
    """The publish plan for the RM: what goes where, what follows the registration
    (``notes``: the public files checked, the release page, the announcement and its hash),
    and the Publish button with a confirm dialog naming the tag. ``text`` is the plain plan;
    its confirm line says until when."""
    tag = str(plan.tag)
    files, size = count(len(plan.files), "file"), size_text(plan.total_size)
    roles = []
    for role, role_files in plan.by_role().items():
        folders = sorted({f.target.rsplit("/", 1)[0] + "/" for f in role_files})
        where = ", ".join(f"`{escape(folder)}`" for folder in folders[:MAX_LISTED])
        more = f" …and {len(folders) - MAX_LISTED} more" if len(folders) > MAX_LISTED else ""
        roles.append(
            f"*{escape(role)}*: {count(len(role_files), 'file')}, "
            f"{size_text(sum(f.size for f in role_files))} → {where}{more}"
        )
    # The plain plan's last line says how long the code lasts; show it with the line as code.
    typed = next((line for line in text.splitlines() if prompt.line in line), prompt.shown)
    typed_line = escape(typed).replace(escape(prompt.shown), f"`{escape(prompt.shown)}`")
    fields = {"tag": prompt.tag, "code": prompt.code}
    if prompt.login_url is not None:
        fields["login"] = "1"  # the click opens the login dialog instead of a confirm dialog
    value = json.dumps(fields, separators=(",", ":"))
    assert len(value) <= MAX_BUTTON_VALUE, "a tag and a code are short"
    dialog = (
        f"All {files} of {tag} ({size}) become public now; then {tag} is registered and "
        "announced. Published files cannot be taken back."
    )
    button: Block = {
        "type": "button",
        "action_id": PUBLISH_ACTION,
        "text": _plain(f"Publish {tag}"),
        "style": "primary",
        "value": value,
    }
    if prompt.login_url is None:
        button["confirm"] = {
            "title": _plain(_clip(f"Publish {tag}?", 100)),
            "text": _plain(_clip(dialog, MAX_DIALOG_TEXT)),
            "confirm": _plain(_clip(f"Publish {tag}", 30)),
            "deny": _plain("Cancel"),
            "style": "primary",
        }
    signing: list[Block] = []
    if prompt.login_url is not None:
        lines = [line for line in text.splitlines() if line.startswith("Signing:")]
        signing.append(
            section(
                "🔏 "
                + escape(lines[0] if lines else "Signing at the confirmation.")
                + f"\n<{prompt.login_url}|Log in to Sigstore>, then press Publish and enter "
                "the code the login page shows."
            )
        )
    return _fit(
        [
            _header(f"Publish plan for {tag}: {files}, {size}"),
            section(_listing("Every file becomes public together:", roles)),
            *([section(_listing("Then:", [escape(n) for n in notes]))] if notes else []),
            *signing,
            {"type": "actions", "block_id": PUBLISH_ACTION, "elements": [button]},
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": _clip(typed_line, 3000)}],
            },
        ]
    )


def login_modal(prompt: ConfirmPrompt, response_url: str) -> dict[str, Any]:
    """The confirm dialog of a plan that signs files: one field, the code the Sigstore login
    page showed. ``private_metadata`` carries the plan's tag and code and where to answer."""
    metadata = json.dumps(
        {"tag": prompt.tag, "code": prompt.code, "response_url": response_url},
        separators=(",", ":"),
    )
    assert len(metadata) <= MAX_METADATA, "a tag, a code and a response URL are short"
    return {
        "type": "modal",
        "callback_id": LOGIN_VIEW,
        "title": _plain(_clip(f"Publish {prompt.tag}?", MAX_MODAL_TITLE)),
        "submit": _plain("Publish"),
        "close": _plain("Cancel"),
        "private_metadata": metadata,
        "blocks": [
            section(
                f"Every file of {escape(prompt.tag)} is signed with your login and becomes "
                "public at once; then it is registered and announced. Published files cannot "
                "be taken back."
            ),
            {
                "type": "input",
                "block_id": LOGIN_INPUT,
                "label": _plain("Code from the Sigstore login page"),
                "element": {
                    "type": "plain_text_input",
                    "action_id": LOGIN_INPUT,
                    "min_length": 4,
                    "max_length": 512,
                },
            },
        ],
    }


def _role_text(role: RoleReadiness, tag: str) -> str:
    word, detail = role_line(role, tag)
    head = f"{ROLE_ICONS.get(word, '•')} *{escape(role.role)}*: {word}"
    if role.excused:  # waived: what it lacks blocks nothing
        return f"{head}, {escape(detail)}"
    if role.claim is not None and role.problems:
        head += f" (claimed by {escape(role.claim.person)} at {when(role.claim.at)})"
    if role.problems:
        required = sum(1 for f in role.files if f.required)
        problems = [f"`{escape(f.path)}` ({f.status.value})" for f in role.problems]
        return _listing(f"{head}, {len(role.problems)} of {required} files not ready:", problems)
    if role.claim is not None:
        size = size_text(sum(f.size or 0 for f in role.present))
        files = count(len(role.present), "file")
        who = f"claimed by {escape(role.claim.person)} at {when(role.claim.at)}"
        return f"{head}\n{who}: {files}, {size}"
    return f"{head}\n{escape(detail)}"


def _listing(head: str, items: Sequence[str]) -> str:
    """``head`` and a bulleted list, cut to fit one section with "…and N more"."""
    shown: list[str] = []
    used = len(head)
    for item in items:
        line = f"\n• {item}"
        if len(shown) == MAX_LISTED or used + len(line) > MAX_SECTION - 40:
            break
        shown.append(line)
        used += len(line)
    rest = len(items) - len(shown)
    return head + "".join(shown) + (f"\n…and {rest} more" if rest else "")


def _chunks(text: str, limit: int = MAX_SECTION - 6) -> Iterable[str]:
    """``text`` in pieces of whole lines that fit a section (minus the code fences)."""
    piece = ""
    for line in text.splitlines():
        line = _clip(line, limit)
        if piece and len(piece) + 1 + len(line) > limit:
            yield piece
            piece = ""
        piece = f"{piece}\n{line}" if piece else line
    yield piece


def _fit(blocks: list[Block]) -> list[Block]:
    """At most 50 blocks: the last one says how many were left out."""
    if len(blocks) <= MAX_BLOCKS:
        return blocks
    rest = len(blocks) - (MAX_BLOCKS - 1)
    note = {"type": "context", "elements": [{"type": "mrkdwn", "text": f"…and {rest} more"}]}
    return [*blocks[: MAX_BLOCKS - 1], note]


def _header(text: str) -> Block:
    return {"type": "header", "text": _plain(_clip(text, MAX_HEADER))}


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, MAX_SECTION)}}


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def escape(text: str) -> str:
    """Slack's three control characters, so a file name or reason never becomes markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    """What was typed: Slack sends ``&``, ``<`` and ``>`` of a command's text escaped."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
