"""The connections to the outside (the ports) that the gate's collaborators share, built
whole by the composition root (``bot.app.build_gate``) and given to the gate.

Held in one object, so every collaborator sees the same port: a test that connects its gate
to a double (a registry, a forum) sets it here, once, for all of them.
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
