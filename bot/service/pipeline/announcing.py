"""Announcing a release beyond the channel, as PEP 101 has the RM do it by hand: check the
files as a user would, make the python.org release page public, post the announcement on the
forum. Each is an optional, journaled pipeline step after registration and the CDN purge:

    register → purge → downloads → release-page → discourse → announce (the channel)

A step with nothing configured does nothing (its journal entry says so). A failing step stops
the publish there, is told to the channel once and retried on every scan; a difference on the
public site therefore stops the release page and the post. The forum's text is drafted before
the confirmation and pinned in the plan (its SHA-256 is in the plan's digest), so what is
posted is byte for byte what the RM was shown.

This module is part of the service layer: it reaches python.org and the forum through
:mod:`bot.ports` only.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Final, Protocol

from bot.config import Config
from bot.domain.announcement import (
    DEFAULT_CHANGELOG,
    DEFAULT_TEMPLATE,
    Announcement,
    AnnouncementError,
    Frame,
    check_template,
    draft,
)
from bot.domain.history import ReleaseState
from bot.domain.plan import PublishPlan
from bot.domain.profile import Profile
from bot.domain.records import PydotorgSettings
from bot.domain.tags import ReleaseTag
from bot.domain.text import not_utf8
from bot.errors import ConfigError, DownloadsError, ForumError, RegistryError, TitleTaken
from bot.metrics import Metrics
from bot.service.connections import Connections
from bot.service.refusals import Refusal
from bot.service.render import count, size_text
from bot.service.reporter import Reporter

log = logging.getLogger(__name__)

DOWNLOADS_STEP: Final = "downloads"
RELEASE_PAGE_STEP: Final = "release-page"
FORUM_STEP: Final = "discourse"
STEPS: Final = (DOWNLOADS_STEP, RELEASE_PAGE_STEP, FORUM_STEP)

_URL_AT_END = re.compile(r"(https?://\S+)$")


class _Run(Protocol):
    """What a step is given (``bot.service.pipeline.steps.Run``): the confirmed plan and the
    journal's state of the release when the pipeline started."""

    @property
    def plan(self) -> PublishPlan: ...

    @property
    def state(self) -> ReleaseState: ...


# -- drafting (before the confirmation) ----------------------------------------------------------


def frame(config: Config, tag: ReleaseTag) -> Frame:
    """What ``tag``'s announcement is drafted from: ``[discourse]``'s template (a file, one
    per branch with ``{branch}``) or the built-in one, and the profile's links. Raises
    :class:`AnnouncementError` with what to fix."""
    profile, settings = config.profile, config.model.discourse
    values = {"branch": tag.branch, "tag": str(tag), "version": tag.version}
    path = config.template_path(values)
    template = DEFAULT_TEMPLATE
    if path is not None:
        try:
            template = path.read_text(encoding="utf-8")
        except OSError as err:
            raise AnnouncementError(
                f"discourse.template: cannot read {path} ({err.strerror}); write the frame of "
                f"{tag}'s announcement there."
            ) from err
        except UnicodeDecodeError as err:
            raise AnnouncementError(f"discourse.template: {path} is {not_utf8(err)}") from err
        check_template(template, f"discourse.template ({path})")
    downloads = config.model.downloads
    return Frame(
        template=template,
        changelog=settings.changelog if settings else DEFAULT_CHANGELOG,
        release_page=profile.links(tag).get("release page", ""),
        files_url=downloads.url if downloads else _files_url(profile),
        sidecars=tuple(rule.suffix for rule in profile.spec.sidecars),
    )


def _files_url(profile: Profile) -> str:
    """Where the profile says public files are served (its ``[pydotorg] files_url``)."""
    try:
        return PydotorgSettings.from_profile(profile).files_url
    except ConfigError:
        return ""


def announced(conn: Connections, state: ReleaseState) -> bool:
    """Whether a publish of this release posts a forum topic: a forum is configured and the
    release is not public yet (late files are not announced again)."""
    return conn.forum is not None and not state.public_files


def draft_for(config: Config, tag: ReleaseTag, targets: Iterable[str], words: str) -> Announcement:
    """``tag``'s announcement for files published at ``targets``; raises
    :class:`AnnouncementError`."""
    folder = config.profile.public_folder(tag)
    return draft(frame(config, tag), tag, folder, sorted(targets), words)


async def blockers(
    config: Config, conn: Connections, tag: ReleaseTag, state: ReleaseState
) -> list[str]:
    """What keeps ``/publish`` from offering a plan, on the announcement's side: the
    release page's and the forum's credentials (checked before anything is public), and
    :func:`text_blockers`."""
    found: list[str] = []
    if conn.release_page is not None and not state.public_files:
        try:
            await asyncio.to_thread(conn.release_page.preflight, tag)
        except RegistryError as err:
            found.append(f"python.org release page: {err}")
    if announced(conn, state):
        assert conn.forum is not None
        try:
            await asyncio.to_thread(conn.forum.preflight)
        except ForumError as err:
            found.append(f"forum: {err}")
    return found + text_blockers(config, conn, tag, state)


def text_blockers(
    config: Config, conn: Connections, tag: ReleaseTag, state: ReleaseState
) -> list[str]:
    """Why the announcement cannot be drafted yet (a frame that cannot be read, the RM's
    words missing), without reaching any service: the release board asks it too."""
    if not announced(conn, state):
        return []
    try:
        wants_words = frame(config, tag).wants_words
    except AnnouncementError as err:
        return [f"announcement: {err}"]
    if wants_words and not state.announcement_words:
        return [f"the announcement needs your words: /announce {tag} TEXT…"]
    return []


def with_announcement(
    config: Config, conn: Connections, plan: PublishPlan, state: ReleaseState
) -> PublishPlan:
    """``plan`` with the announcement its publish posts (unchanged when nothing is posted).
    Raises :class:`Refusal` when the text cannot be drafted."""
    if not announced(conn, state):
        return plan
    try:
        text = draft_for(config, plan.tag, (f.target for f in plan.files), state.announcement_words)
    except AnnouncementError as err:
        raise Refusal(f"{plan.tag} cannot be published yet: {err}") from err
    return replace(plan, announcement=text)


def plan_notes(
    config: Config, conn: Connections, plan: PublishPlan, state: ReleaseState
) -> list[str]:
    """The lines the plan shows about what follows the registration: the check of the
    public files, the release page, the forum post (with the text's SHA-256)."""
    notes = []
    tag = plan.tag
    if conn.downloads is not None:
        notes.append(
            f"Once the files are registered, every file is downloaded from "
            f"{conn.downloads.base_url} and "
            "compared with this plan; a difference stops the release page and the post."
        )
    if not state.public_files:
        page = config.profile.links(tag).get("release page")
        if conn.release_page is not None:
            latest = "" if tag.is_prerelease else ", and is_latest if it is the newest final"
            notes.append(
                f"Then its release page is made public on python.org (is_published, "
                f"pre_release {str(tag.is_prerelease).lower()}{latest})."
            )
        elif page:
            notes.append(
                f'The release page ({page}) stays as it is: tick "Is Published" for {tag} '
                "in the python.org admin."
            )
    if plan.announcement is not None:
        text, forum = plan.announcement, conn.forum
        assert forum is not None  # a plan carries an announcement only when a forum posts it
        notes.append(
            f'Then the announcement is posted on {forum.url} as {forum.username}: "{text.title}" '
            f"({count(len(text.text), 'character')}, SHA-256 {text.short_hash}); "
            f"/announce {tag} shows it."
        )
    return notes


# -- the steps (after the confirmation) -----------------------------------------------------------


class CheckDownloads:
    """Fetch every published file over its public URL and compare it with the plan."""

    name = DOWNLOADS_STEP

    def __init__(self, conn: Connections, metrics: Metrics) -> None:
        self._conn = conn
        self._metrics = metrics

    async def run(self, run: _Run) -> str:
        downloads = self._conn.downloads
        if downloads is None:
            return "no public URL configured"
        try:
            report = await asyncio.to_thread(downloads.verify, run.plan)
        except DownloadsError:
            self._metrics.public_mismatches += 1
            raise
        return (
            f"{count(report.files, 'file')} match their public URLs "
            f"({count(report.bundles, '.sigstore bundle')}; {size_text(report.size)})"
        )


class PublishReleasePage:
    """Make the release's python.org page public (its first publish only)."""

    name = RELEASE_PAGE_STEP

    def __init__(self, conn: Connections, reporter: Reporter) -> None:
        self._conn = conn
        self._reporter = reporter

    async def run(self, run: _Run) -> str:
        page, tag = self._conn.release_page, run.plan.tag
        if page is None:
            return "left to the RM (the python.org admin)"
        if run.state.public_files:
            return "late files: the page is public already"
        report = await asyncio.to_thread(page.publish, tag)
        if report.unexpected:
            # The page is public and stays so; what else changed needs a person's eyes.
            await self._reporter.notice(
                tag,
                f"Making {tag}'s release page public also changed is_latest on "
                f"{', '.join(report.unexpected)}, which it should not have; check those "
                "releases in the python.org admin.",
                mentions=[p for p in (run.state.publisher,) if p],
            )
        if not report.changed:
            return "public already"
        latest = "latest" if report.is_latest else "not latest"
        detail = f"made public ({latest}"
        detail += f"; no longer latest: {', '.join(report.demoted)}" if report.demoted else ""
        detail += (
            f"; unexpected is_latest change: {', '.join(report.unexpected)}"
            if report.unexpected
            else ""
        )
        return detail + ")"


class PostAnnouncement:
    """Post the announcement the RM confirmed on the forum: one topic, never two."""

    name = FORUM_STEP

    def __init__(self, conn: Connections) -> None:
        self._conn = conn

    async def run(self, run: _Run) -> str:
        forum, text = self._conn.forum, run.plan.announcement
        if forum is None:
            return "no forum configured"
        if run.state.public_files:
            return "late files: no new topic"
        if text is None:
            return "the confirmed plan has no announcement"
        # An earlier attempt may have posted with its answer lost: look before posting.
        found = await asyncio.to_thread(forum.find_topic, text.title)
        if found is not None:
            if run.state.step_started == self.name:
                return f"posted by an earlier attempt: {found.url}"
            return f"a topic with this title exists already, nothing posted: {found.url}"
        try:
            topic = await asyncio.to_thread(forum.post, text)
        except TitleTaken:
            where = forum.search_url(text.title)
            return f"a topic with this title exists already, nothing posted: {where}"
        return f"posted: {topic.url}"


def links(state: ReleaseState) -> Mapping[str, str]:
    """What the channel's announcement links besides the profile's links: the forum topic
    (posted, or found), from the journal. Asked by the announce step, which runs after the
    forum's step is done (that step is journaled even when it had nothing to do)."""
    found = _URL_AT_END.search(state.steps_done[FORUM_STEP])
    return {"discussion": found.group(1)} if found else {}
