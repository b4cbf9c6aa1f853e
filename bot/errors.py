"""The exception hierarchy. Every error carries a sentence fit to show a user."""


class RelbotError(Exception):
    """Base of relbot's errors; ``str(err)`` is one user-facing sentence."""


class ConfigError(RelbotError):
    """The configuration is invalid (the message names the key)."""


class TagError(RelbotError):
    """A release tag could not be parsed."""


class StorageError(RelbotError):
    """Staging or public storage could not be read or changed."""


class SparseFile(StorageError):
    """A staged file is mostly holes: far less is stored than its size says (found where
    the storage can tell, as the server's ``stat``)."""

    def __init__(self, path: str, size: int, allocated: int) -> None:
        super().__init__(f"{path} is a sparse file ({size} bytes, {allocated} stored).")
        self.path = path
        self.size = size
        self.allocated = allocated


class StagingUnreachable(StorageError):
    """The storage backend cannot be reached at all (network, permissions)."""


class PromotionConflict(StorageError):
    """A public file exists with content different from the file about to be promoted.

    ``moved`` tells whether this promotion had already made some files public; ``target``
    names the public file in the way (under the public root), when known."""

    def __init__(self, message: str, *, moved: bool = False, target: str = "") -> None:
        super().__init__(message)
        self.moved = moved
        self.target = target


class PublishStopped(StorageError):
    """A confirmed publish cannot go on by itself: what it would make public is not what the
    bot copied at the confirmation (a copy changed or vanished, the bot's work folder was
    replaced), or a public file is not the bot's. Retrying cannot help; the publish stops
    until the RM acts. ``files`` are the planned paths concerned (those a way out leaves
    out), empty when the whole publish is."""

    def __init__(self, message: str, files: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.files = files


class StagedChanged(StorageError):
    """At the freeze, staged originals (``paths``) are not the confirmed files any more
    (``problems``: ``X changed``, ``X is missing``...): the confirmed bytes cannot be had,
    nothing of the publish was made public."""

    def __init__(self, problems: tuple[str, ...], paths: tuple[str, ...]) -> None:
        super().__init__(f"staging changed since the plan ({', '.join(problems)})")
        self.problems = problems
        self.paths = paths


class StateWriteError(StorageError):
    """The state file could not be written (a full disk, a read-only file): the command or
    step that needed it did not happen."""


class StateGone(StateWriteError):
    """The state file was deleted, replaced or swapped for a link while the bot ran: the bot
    records nothing more (it would write into a file nobody reads) until it is restarted."""


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
