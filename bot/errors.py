"""The exception hierarchy. Every error carries a sentence fit to show a user."""


class RelbotError(Exception):
    """Base of relbot's errors; ``str(err)`` is one user-facing sentence."""


class ConfigError(RelbotError):
    """The configuration is invalid (the message names the key)."""


class TagError(RelbotError):
    """A release tag could not be parsed."""


class StorageError(RelbotError):
    """Staging or public storage could not be read or changed."""


class StagingUnreachable(StorageError):
    """The storage backend cannot be reached at all (network, permissions)."""


class PromotionConflict(StorageError):
    """A public file exists with content different from the file about to be promoted.

    ``moved`` tells whether this promotion had already made some files public."""

    def __init__(self, message: str, *, moved: bool = False) -> None:
        super().__init__(message)
        self.moved = moved


class StateLocked(RelbotError):
    """Another process owns the state file."""


class StateFileError(RelbotError):
    """The state file cannot be used (a folder, not SQLite, read-only, not creatable)."""


class StorageLocked(RelbotError):
    """Another relbot holds the storage (its staging and public folders)."""


class RegistryError(RelbotError):
    """The release database refused or could not be reached."""


class DownloadsError(RelbotError):
    """The public copies of published files differ from the plan, or cannot be fetched."""


class ForumError(RelbotError):
    """The forum (Discourse) refused a request or could not be reached."""


class TitleTaken(ForumError):
    """The forum already has a topic with the announcement's title (it refuses a second)."""
