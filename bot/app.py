"""The composition root: builds the ports the config asks for and wires them into a gate."""

from __future__ import annotations

from collections.abc import Callable

from bot.config import Config
from bot.domain.tags import ReleaseTag
from bot.gate import Gate, new_code
from bot.ports import Chat, Purger, Registry, SignatureVerifier, Storage
from bot.state import StateStore
from bot.storage.local import LocalStorage


def build_storage(config: Config) -> Storage:
    """The storage backend of ``[storage]``. SFTP reads the key's passphrase from the env."""
    settings = config.model.storage
    if settings.kind == "local":
        return LocalStorage(config.path(settings.staging), config.path(settings.public))
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
    )


def build_registry(config: Config) -> Registry | None:
    """The release database of ``[pydotorg]``, or None with ``kind = "none"``."""
    settings = config.model.pydotorg
    if settings.kind == "none":
        return None
    from bot.registry import PydotorgRegistry

    auth = config.secret("pydotorg.auth_env", settings.auth_env)
    return PydotorgRegistry(settings.url, auth, config.profile, auth_source=settings.auth_env)


def build_purger(config: Config) -> Purger | None:
    """The CDN purge of ``[cdn]`` (URL templates, default: the profile's), or None."""
    settings = config.model.cdn
    if settings is None:
        return None
    from bot.cdn import CdnPurger

    if settings.purge is None:
        return CdnPurger.from_profile(config.profile)
    return CdnPurger(settings.purge)


def build_verifier(config: Config) -> SignatureVerifier:
    """Sigstore verification with the trusted root and signers of the config and profile."""
    from bot.signatures import SigstoreVerifier  # sigstore is heavy: loaded when used

    return SigstoreVerifier(trusted_root=trusted_root_setting(config), signers=signers(config))


def trusted_root_setting(config: Config) -> str:
    """``[signatures] trusted_root``: a pinned root's name, or the file's path resolved."""
    root = config.model.signatures.trusted_root
    return root if root in ("production", "staging") else str(config.path(root))


def signers(config: Config) -> Callable[[ReleaseTag], tuple[str, str] | None]:
    """Who signs a tag's branch: ``[signatures] identities``, else the profile's signer."""
    overrides = config.model.signatures.identities

    def signer(tag: ReleaseTag) -> tuple[str, str] | None:
        return overrides.get(tag.branch) or config.profile.signer(tag)

    return signer


def build_gate(
    config: Config,
    chat: Chat,
    *,
    store: StateStore | None = None,
    connect: bool = True,
    code_factory: Callable[[], str] = new_code,
) -> Gate:
    """A gate on the configured storage and state. ``connect=False`` leaves out the services
    that need secrets (for ``relbot status``, which must work without them)."""
    return Gate(
        config,
        store or StateStore(config.state_path),
        build_storage(config),
        chat,
        registry=build_registry(config) if connect else None,
        purger=build_purger(config) if connect else None,
        verifier=build_verifier(config),
        code_factory=code_factory,
    )
