"""The outside world of ``relbot rehearse``, started on 127.0.0.1 in a fresh folder: the
private Sigstore instance and its login page, python.org (the API double), a Discourse double,
the public folder served as the download site; the demo release staged unsigned, and a
``relbot.toml`` that requires signatures and names every service. Everything stops when the
``with`` block ends.

It lives in the clone's ``tests/`` package, beside the doubles it drives as they are, not in
the installed package: an installed relbot has neither them nor their test-only dependencies
(pyjwt, rfc8785). ``bot.cli`` imports it from the clone ``bot`` was imported from, and says in
one sentence when there is none. Every service is a thread of the rehearsal's own process, so
nothing it starts can outlive it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import bot
from bot.demo import DEMO_TAG, stage_demo
from bot.domain.profile import load_profile
from tests.doubles.discourse import DiscourseDouble
from tests.doubles.downloads import PublicSite
from tests.doubles.pydotorg import PydotorgDouble
from tests.sigstore_instance import SigstoreInstance

RELEASE = f"Python {DEMO_TAG}"
FORUM_USER = "hugo"
# The environment variables the config names; their values are made afresh each rehearsal.
SECRETS = ("RELBOT_REHEARSAL_PYDOTORG", "RELBOT_REHEARSAL_PYDOTORG_TOKEN", "RELBOT_REHEARSAL_FORUM")
# The bot's copy of the release cycle: a rehearsal reads nothing from the network.
RELEASE_CYCLE = Path(bot.__file__).parent / "data" / "release-cycle.json"
CONFIG = """\
release_cycle = "{release_cycle}"
state = "relbot-data/state.db"

[storage]
kind = "local"
staging = "relbot-data/staging"
public = "relbot-data/public"

[signatures]
require = true
trusted_root = "sigstore-trust.json"  # the private instance's root and signing services

[pydotorg]
kind = "api"
url = "{api}"
auth_env = "RELBOT_REHEARSAL_PYDOTORG"
release_page = true
token_env = "RELBOT_REHEARSAL_PYDOTORG_TOKEN"

[cdn]
purge = ["{api_base}downloads/"]

[downloads]
url = "{downloads}"

[discourse]
url = "{forum}"
api_key_env = "RELBOT_REHEARSAL_FORUM"
username = "{forum_user}"

[people.hugo]
rm = ["3.14"]
roles = ["source", "docs"]

[people.steve]
roles = ["windows"]

[people.ned]
roles = ["macos"]
"""


@dataclass(frozen=True)
class World:
    """The running services of one rehearsal and where its files are."""

    folder: Path
    sigstore: SigstoreInstance
    api: PydotorgDouble
    forum: DiscourseDouble
    site: PublicSite

    @property
    def config(self) -> Path:
        return self.folder / "relbot.toml"

    @property
    def public(self) -> Path:
        return self.folder / "relbot-data" / "public"

    def services(self) -> list[str]:
        """One line per service: what it stands in for and its URL."""
        return [
            f"Sigstore (private instance; its login page shows the code): {self.sigstore.url}",
            f"Sigstore's transparency log: {self.sigstore.log_url}",
            f"python.org (API double): {self.api.url}",
            f"Discourse (double): {self.forum.url}",
            f"Download site (the public folder): {self.site.url}",
        ]


@contextlib.contextmanager
def started(under: Path) -> Iterator[World]:
    """Make a fresh folder under ``under``, start every service, stage the demo release and
    write its config; on leaving, stop every service (the folder stays, for ``relbot audit``).
    Sets the secrets the config names in this process's environment."""
    folder = Path(tempfile.mkdtemp(prefix="relbot-rehearsal-", dir=under))
    keys = {name: secrets.token_urlsafe(16) for name in SECRETS}
    public = folder / "relbot-data" / "public"
    public.mkdir(parents=True)  # `relbot run` creates no folder
    with (
        SigstoreInstance() as sigstore,
        PydotorgDouble(
            users={"rm": (keys["RELBOT_REHEARSAL_PYDOTORG"], True)},
            tokens={"rm": (keys["RELBOT_REHEARSAL_PYDOTORG_TOKEN"], True)},
        ) as api,
        DiscourseDouble(users={FORUM_USER: keys["RELBOT_REHEARSAL_FORUM"]}) as forum,
        PublicSite(public) as site,
    ):
        os.environ["RELBOT_REHEARSAL_PYDOTORG"] = f"rm:{keys['RELBOT_REHEARSAL_PYDOTORG']}"
        os.environ["RELBOT_REHEARSAL_PYDOTORG_TOKEN"] = keys["RELBOT_REHEARSAL_PYDOTORG_TOKEN"]
        os.environ["RELBOT_REHEARSAL_FORUM"] = keys["RELBOT_REHEARSAL_FORUM"]
        os.environ.pop("SIGSTORE_IDENTITY_TOKEN", None)  # the login link is what is rehearsed
        # As on python.org before a release day: the previous release is the latest, the
        # RM has created the new one in the admin.
        api.add_release(f"Python {DEMO_TAG.major}.{DEMO_TAG.minor}.0", published=True, latest=True)
        api.add_release(RELEASE)
        sigstore.write_trust_config(folder / "sigstore-trust.json")
        stage_demo(folder / "relbot-data" / "staging", load_profile("cpython"))
        (folder / "relbot.toml").write_text(
            CONFIG.format(
                release_cycle=RELEASE_CYCLE.as_posix(),
                api=api.url,
                api_base=api.base_url,
                downloads=site.url,
                forum=forum.url,
                forum_user=FORUM_USER,
            ),
            encoding="utf-8",
        )
        yield World(folder, sigstore, api, forum, site)


def outcome(world: World) -> list[str]:
    """What the world saw, once the bot has stopped: the public files, python.org's records
    and release page, the forum's topics."""
    public = sorted(p.relative_to(world.public).as_posix() for p in world.public.rglob("*"))
    files = [p for p in public if (world.public / p).is_file()]
    page = world.api.release(RELEASE)
    flags = ", ".join(
        word
        for word, on in (("published", page["is_published"]), ("latest", page["is_latest"]))
        if on
    )
    lines = [f"Public ({world.public}): {len(files)} files."]
    lines += [f"  {path}" for path in files]
    records = world.api.files(RELEASE)
    lines.append(
        f"python.org: {RELEASE} has {len(records)} file records; its release page is "
        f"{flags or 'not published'}."
    )
    lines += [
        f"  {record['url']}"
        + (" with its .sigstore bundle" if record["sigstore_bundle_file"] else "")
        for record in records
    ]
    topics = world.forum.topics
    lines.append(f"Discourse: {len(topics)} topic(s).")
    lines += [f"  {t.title}: {world.forum.url}t/{t.slug}/{t.id}" for t in topics]
    return lines


__all__ = ["RELEASE", "World", "outcome", "started"]
