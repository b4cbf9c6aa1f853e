"""The composition root: the one place that names the concrete adapters.

It builds what the config asks for (storage, state, the python.org registry, the CDN purger,
Sigstore, the chat platforms) and wires it into a gate; the gate and everything under it
know only :mod:`bot.ports`. Heavy libraries (paramiko, sigstore, the chat SDKs) are imported
only when their adapter is built.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from adapters.console import FIXED_CODE_ENV as FIXED_CODE_ENV
from adapters.console import Console, ConsoleChat, fixed_code
from adapters.platform import FanoutChat
from adapters.platform import Platform as Platform
from bot.config import Config
from bot.domain.tags import ReleaseTag
from bot.errors import RelbotError
from bot.journal.store import StateStore
from bot.metrics import Metrics
from bot.ports import (
    Chat,
    Forum,
    PublicDownloads,
    Purger,
    Registry,
    ReleasePage,
    SignatureVerifier,
    Storage,
)
from bot.ports.lease import StorageLease
from bot.service.connections import Connections
from bot.service.gate import Gate, new_code
from bot.storage.local import LocalStorage

if TYPE_CHECKING:
    from sigstore.models import ClientTrustConfig
    from sigstore.oidc import IdentityToken

    from bot.scheduler import Poller  # APScheduler: loaded by those that run the bot
    from bot.signing.signer import SigningOutcome


def build_storage(config: Config) -> Storage:
    """The storage backend of ``[storage]``. SFTP reads the key's passphrase from the env."""
    settings = config.model.storage
    if settings.kind == "local":
        work = config.path(settings.work) if settings.work is not None else None
        return LocalStorage(config.path(settings.staging), config.path(settings.public), work)
    from bot.storage.sftp import SftpStorage  # paramiko is only loaded when used

    assert settings.host and settings.user and settings.key_file and settings.known_hosts
    passphrase = (
        config.secret("storage.passphrase_env", settings.passphrase_env)
        if settings.passphrase_env
        else None
    )
    return SftpStorage(
        host=settings.host,
        port=settings.port,
        user=settings.user,
        key_file=config.path(settings.key_file),
        known_hosts=config.path(settings.known_hosts),
        staging=settings.staging,
        public=settings.public,
        passphrase=passphrase,
        group=settings.group,
        work=settings.work,
    )


def build_registry(config: Config) -> Registry | None:
    """The release database of ``[pydotorg]``, or None with ``kind = "none"``. The process
    has one: every publish syncs through it, within one budget of python.org's API v1 (600
    requests an hour for the API user, however many releases publish at once)."""
    settings = config.model.pydotorg
    if settings.kind == "none":
        return None
    from bot.http_client import RetryPolicy
    from bot.pydotorg.rate_limit import api_v1_budget
    from bot.pydotorg.registry import PydotorgRegistry

    auth = config.secret("pydotorg.auth_env", settings.auth_env)
    return PydotorgRegistry(
        settings.url,
        auth,
        config.profile,
        auth_source=settings.auth_env,
        retry=RetryPolicy(max_wait=settings.max_wait),
        budget=api_v1_budget(),
    )


def build_purger(config: Config) -> Purger | None:
    """The CDN purge of ``[cdn]`` (URL templates, default: the profile's), or None. The
    process has one: publishes purge through it in turn, and none sends a URL again that
    another sent after it asked."""
    settings = config.model.cdn
    if settings is None:
        return None
    from bot.pydotorg.cdn import CdnPurger

    if settings.purge is None:
        return CdnPurger.from_profile(config.profile)
    return CdnPurger(settings.purge)


def build_downloads(config: Config) -> PublicDownloads | None:
    """The check of the published files over their public URLs (``[downloads]``), or None."""
    settings = config.model.downloads
    if settings is None:
        return None
    from bot.pydotorg.downloads import DownloadsCheck

    return DownloadsCheck(settings.url)


def build_release_page(config: Config) -> ReleasePage | None:
    """python.org's release page made public through API v2 (``[pydotorg] release_page``),
    or None; the staff token comes from the environment."""
    settings = config.model.pydotorg
    if not settings.release_page:
        return None
    from bot.pydotorg.release_page import ReleasePageClient, v2_url

    token = config.secret("pydotorg.token_env", settings.token_env)
    return ReleasePageClient(
        v2_url(settings.url), token, config.profile, token_source=settings.token_env
    )


def build_forum(config: Config) -> Forum | None:
    """The forum the announcement is posted on (``[discourse]``), or None; the RM's API key
    comes from the environment."""
    settings = config.model.discourse
    if settings is None:
        return None
    from bot.pydotorg.discourse import DiscourseClient

    key = config.secret("discourse.api_key_env", settings.api_key_env)
    return DiscourseClient(
        settings.url,
        key,
        settings.username,
        category=settings.category,
        tags=settings.tags,
        key_source=settings.api_key_env,
    )


def build_verifier(config: Config) -> SignatureVerifier:
    """Sigstore verification with the trusted root and signers of the config and profile."""
    from bot.signing.verifier import SigstoreVerifier  # sigstore is heavy: loaded when used

    return SigstoreVerifier(trusted_root=trusted_root_setting(config), signers=signers(config))


def trusted_root_setting(config: Config) -> str:
    """``[signatures] trusted_root``: a pinned root's name, or the file's path resolved."""
    return config.trusted_root


def signers(config: Config) -> Callable[[ReleaseTag], tuple[str, str] | None]:
    """Who signs a tag's branch: ``[signatures] identities``, else the profile's signer."""
    return config.signer


def run_sign(config: Config, tag: ReleaseTag, *, oob: bool | None = None) -> SigningOutcome:
    """``relbot sign TAG`` on the configured storage and Sigstore instance. Raises
    :class:`RelbotError` with one sentence for what stops it before anything is signed."""
    from bot.signing.signer import (  # sigstore is heavy: loaded when used
        files_to_sign,
        identity_token,
        load_signing_trust,
        registered_by,
        sign_release,
    )

    storage = build_storage(config)
    listing = storage.list_staging(tag)
    if listing is None:
        raise RelbotError(
            f"Nothing is staged for {tag} in {storage.staging_location(tag)}; nothing to sign."
        )
    paths = files_to_sign(config.profile, tag, listing, registered_by(config.profile, tag))
    verifier = build_verifier(config)
    setting = trusted_root_setting(config)
    trust: list[ClientTrustConfig] = []

    def token() -> IdentityToken:
        trust.append(load_signing_trust(setting))
        return identity_token(trust[0], oob=oob)

    return sign_release(
        tag,
        storage,
        verifier,
        lambda: trust[0],
        paths,
        signers(config),
        token,
        listing,
    )


def build_gate(
    config: Config,
    chat: Chat,
    *,
    store: StateStore | None = None,
    connect: bool = True,
    lease: StorageLease | None = None,
    metrics: Metrics | None = None,
    code_factory: Callable[[], str] = new_code,
) -> Gate:
    """A gate on the configured storage and state, built whole: every port it talks through
    is made here. ``connect=False`` leaves out the services that need secrets (for ``relbot
    status``, which must work without them); ``lease``: the storage lock ``relbot run``
    holds; ``metrics``: what ``/metrics`` and ``/healthz`` serve."""
    conn = Connections(
        build_storage(config),
        chat,
        registry=build_registry(config) if connect else None,
        verifier=build_verifier(config),
        purger=build_purger(config) if connect else None,
        lease=lease,
        downloads=build_downloads(config) if connect else None,
        release_page=build_release_page(config) if connect else None,
        forum=build_forum(config) if connect else None,
    )
    store = store or StateStore(config.state_path)
    return Gate(config, store, conn, metrics=metrics, code_factory=code_factory)


def build_platform(config: Config, name: str) -> Platform:
    """The chat platform ``name`` (``slack``, ``discord``); each reads its own secrets from
    the environment and raises ConfigError naming the key when one is missing."""
    if name == "slack":
        from adapters.slack.platform import SlackPlatform  # each SDK is loaded when used

        return SlackPlatform.from_config(config)
    from adapters.discord.platform import DiscordPlatform

    return DiscordPlatform.from_config(config)


def slack_manifest(config: Config, url: str | None = None) -> str:
    """The Slack app manifest for ``[slack]`` (its command prefix and mode; no table: the
    defaults), so the commands Slack offers are those relbot answers."""
    from adapters.slack.commands import manifest

    settings = config.model.slack
    if settings is None:
        return manifest(url=url)
    return manifest(settings.command_prefix, settings.mode, url)


def platforms_chat(platforms: Sequence[Platform]) -> FanoutChat:
    """One release channel over every platform's: a message shows on each. Its ``health``
    records a channel that refuses posts (give it to the gate's metrics for ``/healthz``)."""
    return FanoutChat([(p.name, p.chat) for p in platforms])


def console_chat(out: TextIO) -> Chat:
    """The release channel of the console platform: printed to ``out``."""
    return ConsoleChat(out)


def console_codes(environ: Mapping[str, str] = os.environ) -> Callable[[], str]:
    """The console's confirmation codes: fixed by ``RELBOT_CONSOLE_FIXED_CODE`` for a
    rehearsal (ConfigError when it is not a code), else random."""
    return fixed_code(environ) or new_code


def build_console(
    gate: Gate, chat: Chat, poller: Poller, people: Sequence[str], speaker: str, out: TextIO
) -> Console:
    """The console platform: commands typed as ``speaker`` (``/as NAME`` switches); ``chat``
    is the gate's channel (the console's own prints after each reply)."""
    return Console(gate, chat, poller, people, speaker, out)
