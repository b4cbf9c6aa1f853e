"""The release board's HTML: server-rendered pages that read well without JavaScript, with one
small inline script that keeps an open page current.

Every value that comes from outside (file names, reasons, people, commands) goes through
:func:`_e`; the page's only script and style are constants, allowed by hash in the
Content-Security-Policy, so even a name that slipped through could not run.

Over 400 lines because it is the pages' HTML, their style and their script, as templates.
"""

from __future__ import annotations

import base64
import hashlib
import html
import time
from collections.abc import Mapping, Sequence

from bot.service.render import count, size_text
from bot.web.board import EventView, FileView, NoteView, PlanView, ReleaseView, RoleView

STYLE = """
body{font:16px/1.45 system-ui,sans-serif;margin:0 auto;max-width:80rem;padding:0 1rem;color:#1a1a1a}
a{color:#0645ad}h1{margin:.3em 0}h2{margin-top:1.6em;font-size:1.25rem}
table{border-collapse:collapse;width:100%;margin:.5em 0}
caption{text-align:left;font-weight:600;padding:.3em 0}
th,td{border:1px solid #bbb;padding:.3em .5em;text-align:left;vertical-align:top}
thead th{background:#eee}
td.num{text-align:right;white-space:nowrap}
code.sha{font-size:.85em;display:inline-block;max-width:13ch;overflow:hidden;
text-overflow:ellipsis;white-space:nowrap;vertical-align:bottom}
.ago{color:#555;font-size:.9em;white-space:nowrap}
dt{font-weight:600}dd{margin:0 0 .4em 1.5em}
.state{display:inline-block;padding:0 .45em;border-radius:.3em;font-weight:600;
border:1px solid currentColor;white-space:nowrap}
.good{background:#d9f2dc;color:#0b5a1c}.wait{background:#dde8f7;color:#123f7a}
.bad{background:#fbe0d9;color:#8a1c05}.warn{background:#fdf0c8;color:#6b4b00}
.none{background:#eee;color:#333}
.headline{font-size:1.2rem;padding:.5em .7em;border-radius:.3em}
#live{color:#555;font-size:.9rem}
td .headline{font-size:1rem;margin:0}
"""

SCRIPT = """
(function () {
  var every = 1000 * Number(document.body.getAttribute("data-refresh") || "5");
  var kind = document.body.getAttribute("data-kind");
  var live = document.getElementById("live");
  var last = document.documentElement.outerHTML;
  function say(text) { if (live) { live.textContent = text; } }
  function swap(page) {
    var fresh = new DOMParser().parseFromString(page, "text/html");
    if (fresh.body.getAttribute("data-kind") !== kind) { location.reload(); return; }
    document.title = fresh.title;
    fresh.querySelectorAll("[data-live]").forEach(function (node) {
      var old = document.getElementById(node.id);
      if (old && old.innerHTML !== node.innerHTML) { old.innerHTML = node.innerHTML; }
    });
  }
  function tick() {
    fetch(location.href, {cache: "no-cache", headers: {"Accept": "text/html"}})
      .then(function (response) { return response.text(); })
      .then(function (page) {
        if (page !== last) { last = page; swap(page); }
        say("Live: checked at " + new Date().toISOString().slice(11, 19) + " UTC.");
      })
      .catch(function () { say("The board cannot be reached; retrying."); })
      .then(function () { setTimeout(tick, every); });
  }
  say("Live: this page updates itself every " + every / 1000 + " s.");
  setTimeout(tick, every);
})();
"""


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; script-src {_hash(SCRIPT)}; style-src {_hash(STYLE)}; "
    "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)

ROLE_TONE = {"ready": "good", "complete": "wait", "incomplete": "bad", "withdrawn": "warn"}
FILE_TONE = {
    "present": "good",
    "published": "good",
    "publishing": "wait",
    "missing": "bad",
    "unusable": "bad",  # cannot be the artifact: its role's detail says why and what to do
}
SIGNATURE_TONE = {"valid": "good", "missing": "warn", "invalid": "bad"}
GLANCE_TONE = {  # /status's words for where a release stands (bot/service/glance.py)
    "publishable": "good",
    "published": "good",
    "publishing": "wait",
    "collecting": "wait",
    "ready": "warn",
    "held": "bad",
    "aborted": "bad",
}


def _e(text: object) -> str:
    """Escaped for HTML text and attribute values."""
    return html.escape(str(text), quote=True)


def _badge(word: str, tone: str, title: str = "") -> str:
    hint = f' title="{_e(title)}"' if title else ""
    return f'<span class="state {tone}"{hint}>{_e(word)}</span>'


def ago(at: float, now: float) -> str:
    """How far ``at`` is from ``now``, in words: ``12 minutes ago``, ``in 7 minutes``. In
    whole minutes at least, so that a page changes (and is sent again) at most once a
    minute."""
    seconds = now - at
    span = abs(seconds)
    if span < 60:
        return "just now" if seconds >= 0 else "in less than a minute"
    if span < 3600:
        amount = count(int(span // 60), "minute")
    elif span < 48 * 3600:
        amount = count(int(span // 3600), "hour")
    else:
        amount = count(int(span // 86400), "day")
    return f"{amount} ago" if seconds >= 0 else f"in {amount}"


def _time(at: float | None, now: float) -> str:
    """The absolute time, and beside it how long ago (or how soon) that is."""
    if at is None:
        return "—"
    iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    shown = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
    return f'<time datetime="{iso}">{shown}</time> <span class="ago">({_e(ago(at, now))})</span>'


def _link(url: str, text: str) -> str:
    """A link to ``url`` when it is a web address, else the text alone."""
    if not url.startswith(("https://", "http://")):
        return _e(text)
    return f'<a href="{_e(url)}">{_e(text)}</a>'


def _table(caption: str, headers: Sequence[str], rows: Sequence[str]) -> str:
    head = "".join(f'<th scope="col">{_e(h)}</th>' for h in headers)
    return (
        f"<table><caption>{_e(caption)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def page(
    title: str,
    kind: str,
    heading: str,
    body: str,
    refresh: int,
    scanned_at: float,
    now: float | None = None,
) -> str:
    """A whole page around ``body`` (HTML): ``kind`` tells the script which page it is on (a
    404 that becomes a release reloads), ``refresh`` how many seconds between its checks."""
    now = time.time() if now is None else now
    scanned = _time(scanned_at, now) if scanned_at else "not yet"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{STYLE}</style>"
        f'<noscript><meta http-equiv="refresh" content="{refresh * 6}"></noscript></head>'
        f'<body data-kind="{_e(kind)}" data-refresh="{refresh}">'
        f'<header><p><a href="/">Release board</a></p><h1>{_e(heading)}</h1></header>'
        f'<main id="board">{body}</main>'
        '<footer><p id="asof" data-live="">Staging last scanned: '
        f"{scanned}. Read-only: commands are given in the release channel.</p>"
        f'<p id="live">Without JavaScript, this page reloads itself every {refresh * 6} s.</p>'
        "</footer>"
        f"<script>{SCRIPT}</script></body></html>"
    )


# -- the index ---------------------------------------------------------------------------


def index_body(
    open_views: Sequence[ReleaseView],
    published: Sequence[ReleaseView],
    roles: Sequence[str],
    now: float | None = None,
    *,
    acting: Mapping[str, tuple[str, str]] | None = None,
) -> str:
    """The day on one page: every open release with its headline, what blocks it, where it
    stands and who must act (``acting``: tag → ``/status``'s word and detail) and its roles;
    then the releases published lately, with where their files are public."""
    now = time.time() if now is None else now
    acting = acting or {}
    rows = []
    for view in open_views:
        states = {r.role: r for r in view.roles}
        cells = "".join(
            f"<td>{_role_badge(states[role]) if role in states else 'not part of it'}</td>"
            for role in roles
        )
        word, detail = acting.get(view.tag, ("", ""))
        who = f"{_badge(word, GLANCE_TONE.get(word, 'none'))} {_e(detail)}" if word else ""
        rows.append(
            f'<tr><th scope="row"><a href="/releases/{_e(view.tag)}">{_e(view.tag)}</a></th>'
            f"<td>{_headline(view)}{_blocker_list(view)}</td>"
            f'<td class="acting">{who}</td>{cells}</tr>'
        )
    open_html = (
        _table(
            "Each open release: can it be published, who must act, and its roles",
            ["Release", "Headline", "Who must act", *roles],
            rows,
        )
        if rows
        else "<p>No open release: stage files to start one.</p>"
    )
    done = [
        f'<tr><th scope="row"><a href="/releases/{_e(v.tag)}">{_e(v.tag)}</a></th>'
        f"<td>{_e(v.published_by or '')}</td><td>{_time(v.published_at, now)}</td>"
        f"<td>{_public(v)}</td></tr>"
        for v in published
    ]
    done_html = (
        _table(
            "The last releases published, and where they are public",
            ["Release", "Published by", "At", "Public"],
            done,
        )
        if done
        else "<p>Nothing published yet.</p>"
    )
    return (
        '<section aria-labelledby="h-open"><h2 id="h-open">Open releases</h2>'
        f'<div id="open" data-live="">{open_html}</div></section>'
        '<section aria-labelledby="h-published"><h2 id="h-published">Recently published</h2>'
        f'<div id="published" data-live="">{done_html}</div></section>'
    )


def _public(view: ReleaseView) -> str:
    """How many files of a published release are public, and its links."""
    files = count(len(view.files) + view.files_not_shown, "file")
    links = ", ".join(_link(url, label) for label, url in view.links)
    return f"{files}" + (f"; {links}" if links else "")


# -- one release -------------------------------------------------------------------------


def release_body(view: ReleaseView, now: float | None = None) -> str:
    """Headline and blockers (or, once published, where to find it), roles, holds, waivers,
    plan, files, timeline."""
    now = time.time() if now is None else now
    sections = [
        ("roles", "Roles", _roles(view.roles, now)),
        ("holds", "Holds", _holds(view.holds, now)),
        ("waivers", "Waivers", _waivers(view.waivers, now)),
        ("plan", "Publish plan", _plan(view.plan, now)),
        ("files", "Files", _files(view)),
        ("timeline", "Timeline", _timeline(view, now)),
    ]
    parts = [
        '<section id="summary" data-live="" role="status" aria-live="polite">'
        f"{_headline(view)}{_blocker_list(view)}{_links(view)}</section>"
    ]
    for ident, title, content in sections:
        parts.append(
            f'<section aria-labelledby="h-{ident}"><h2 id="h-{ident}">{_e(title)}</h2>'
            f'<div id="{ident}" data-live="">{content}</div></section>'
        )
    return "".join(parts)


def _headline(view: ReleaseView) -> str:
    if view.published:
        tone = "good"
    elif view.publishing or view.publishable:
        tone = "wait" if view.publishing else "good"
    else:
        tone = "bad"
    return f'<p class="headline {tone}">{_e(view.headline)}</p>'


def _blocker_list(view: ReleaseView) -> str:
    if view.published or view.publishable:
        return ""
    items = "".join(f"<li>{_e(b)}</li>" for b in view.blockers)
    return f'<ul class="blockers" aria-label="What blocks publishing">{items}</ul>'


def _links(view: ReleaseView) -> str:
    """Where people find the published release: its page on python.org, its files."""
    if not view.links:
        return ""
    items = "".join(
        f"<li>{_e(label.capitalize())}: {_link(url, url)}</li>" for label, url in view.links
    )
    return f'<ul class="links" aria-label="Where to find it">{items}</ul>'


def _role_badge(role: RoleView) -> str:
    return _badge(role.state.value, ROLE_TONE.get(role.state.value, "none"))


def _roles(roles: Sequence[RoleView], now: float) -> str:
    rows = [
        f'<tr><th scope="row">{_e(r.role)}</th><td>{_role_badge(r)}</td>'
        f"<td>{_e(r.by or '—')}</td><td>{_time(r.at, now)}</td><td>{_e(_detail(r))}</td></tr>"
        for r in roles
    ]
    return _table(
        "Each role's state, with who and when", ["Role", "State", "By", "When", "Detail"], rows
    )


def _detail(role: RoleView) -> str:
    """The summary's detail without who (the By column says it): ``4 files, 212 bytes``."""
    if role.by:
        for said in (f"{role.by}, ", f"by {role.by}: ", f"by {role.by}"):
            if role.detail.startswith(said):
                return role.detail[len(said) :] or "—"
    return role.detail


def _holds(holds: Sequence[NoteView], now: float) -> str:
    if not holds:
        return "<p>No holds.</p>"
    rows = [
        f'<tr><th scope="row">{_e(h.by)}</th><td>{_e(h.reason or "(no reason given)")}</td>'
        f"<td>{_time(h.at, now)}</td></tr>"
        for h in holds
    ]
    return _table(
        "Holds: nothing is published until each is lifted", ["Held by", "Reason", "Since"], rows
    )


def _waivers(waivers: Sequence[NoteView], now: float) -> str:
    if not waivers:
        return "<p>No waivers.</p>"
    rows = [
        f'<tr><th scope="row">{_e(w.subject)}</th><td>{_e(w.by)}</td>'
        f"<td>{_e(w.reason or '(no reason given)')}</td><td>{_time(w.at, now)}</td></tr>"
        for w in waivers
    ]
    return _table("Waived for this release", ["Waived", "By", "Reason", "Since"], rows)


def _plan(plan: PlanView | None, now: float) -> str:
    if plan is None:
        return "<p>No plan: the release manager has not asked to publish.</p>"
    words = {
        "offered": f"Offered to {plan.by}, waiting for their confirmation",
        "expired": f"Offered to {plan.by}; its confirmation has expired",
        "publishing": f"Confirmed by {plan.by}; publishing",
        "published": f"Confirmed by {plan.by}; published",
    }
    rows = [
        ("Plan", _e(words.get(plan.stage, plan.stage))),
        ("Files", f"{count(plan.files, 'file')} ({_e(size_text(plan.size))})"),
        ("Goes to", _e(", ".join(plan.folders))),
        ("Plan digest", f"<code>{_e(plan.digest[:16])}</code>"),
    ]
    if plan.expires_at is not None:
        rows.append(("Confirmation valid until", _time(plan.expires_at, now)))
    if plan.stage in ("publishing", "published"):
        rows.append(("Steps done", _e(", ".join(plan.steps_done) or "none yet")))
    items = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in rows)
    return f"<dl>{items}</dl>"


def _files(view: ReleaseView) -> str:
    if not view.files:
        if view.listed:
            return "<p>Nothing is staged.</p>"
        return "<p>Staging has not been listed since the bot started; it is at the next scan.</p>"
    # Once published the files' signatures are not checked any more: a column saying
    # "not checked" on every row would be noise.
    checked = any(f.signature is not None for f in view.files)
    rows = [_file_row(f, view.signatures_required, checked) for f in view.files]
    rule = "required" if view.signatures_required else "shown, not required"
    more = f", and {view.files_not_shown} more entries not shown" if view.files_not_shown else ""
    signatures = f" (signatures {rule})" if checked else ""
    caption = (
        f"{count(len(view.files), 'file')}{more}{signatures}; "
        "where each goes is relative to the public folder"
    )
    headers = ["File", "Role", "Status", "Size", "SHA-256"]
    headers += ["Signature", "Goes to"] if checked else ["Goes to"]
    return _table(caption, headers, rows)


def _file_row(f: FileView, required_signatures: bool, checked: bool) -> str:
    status = f.status + ("" if f.required or f.role is None else " (optional)")
    size = "—" if f.size is None else f'<data value="{f.size}">{_e(size_text(f.size))}</data>'
    # The whole hash is in the page (a double click or a copy takes all of it); it shows as
    # its first characters, and in full on hover.
    sha = (
        f'<code class="sha" title="{_e(f.sha256)}">{_e(f.sha256)}</code>'
        if f.sha256
        else "not hashed yet"
    )
    if f.signature is None:
        signature = "not checked"
    elif f.signature == "missing" and not required_signatures:
        # A release that does not sign would drown in warnings: say it is not asked for.
        signature = _badge("not required", "none", "unsigned; signatures are not required")
    else:
        invalid = f.signature == "invalid" and f.signature_reason  # why; a missing one is plain
        reason = f" ({_e(f.signature_reason)})" if invalid else ""
        signature = _badge(f.signature, SIGNATURE_TONE.get(f.signature, "none")) + reason
    if f.target is None:
        target = "not published (no role may stage it)"
    else:
        target = _link(f.url, f.target) if f.url else _e(f.target)
    return (
        f'<tr><th scope="row">{_e(f.path)}</th><td>{_e(f.role or "—")}</td>'
        f"<td>{_badge(status, FILE_TONE.get(f.status, 'warn'))}</td>"
        f'<td class="num">{size}</td><td>{sha}</td>'
        + (f"<td>{signature}</td>" if checked else "")
        + f"<td>{target}</td></tr>"
    )


def _timeline(view: ReleaseView, now: float) -> str:
    if not view.timeline:
        return "<p>Nothing recorded yet.</p>"
    rows = [_event_row(e, now) for e in view.timeline]
    older = view.events - len(view.timeline)
    caption = "The audit trail, newest first" + (
        f" ({count(older, 'older event')}: relbot audit {view.tag})" if older > 0 else ""
    )
    return _table(caption, ["When", "Who", "Event", "Detail"], rows)


def _event_row(e: EventView, now: float) -> str:
    return (
        f'<tr><th scope="row">{_time(e.at, now)}</th><td>{_e(e.actor)}</td><td>{_e(e.kind)}</td>'
        f"<td>{_e(e.detail)}</td></tr>"
    )


def not_found_body(text: str) -> str:
    return f'<section id="summary" data-live="" role="status"><p>{_e(text)}</p></section>'
