"""The connections to the outside (the ports) that the gate's collaborators share.

Held in one mutable object so that wiring set after construction (``relbot run`` takes the
storage lease after building the gate; tests swap in a registry) reaches every collaborator.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass
class Connections:
    storage: Storage
    chat: Chat
    registry: Registry | None = None
    verifier: SignatureVerifier | None = None
    purger: Purger | None = None
    lease: StorageLease | None = None  # the storage lock, held by `relbot run`
    # The announcement (each optional): the public site checked, the release page, the forum.
    downloads: PublicDownloads | None = None
    release_page: ReleasePage | None = None
    forum: Forum | None = None
