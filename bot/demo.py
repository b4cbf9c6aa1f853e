"""The built-in local default as a rehearsal: the demo release it stages on first start, the
folders it makes for itself, and ``relbot demo [--reset]``, which says where the rehearsal
keeps its data and starts it again.

Its files are stand-ins and the demo runs offline, so it cannot be signed with Sigstore: the
built-in default opts out of signatures in the open (``"signatures": {"require": False}`` in
``bot.config.DEFAULT_CONFIG``), and its summary and plan say signatures are not required.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from bot.config import Config
from bot.config.cycle_copy import CACHE_NAME  # the copy of the release cycle last read
from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag
from bot.errors import RelbotError
from bot.journal.store import OwnerLock, StateStore
from bot.service.render import when
from bot.storage.primitives import default_work

DEMO_TAG = ReleaseTag.parse("3.14.1")
BUILT_IN = "built-in default"  # Config.origin when no config file is used


def stage_demo(staging: Path, profile: Profile, tag: ReleaseTag = DEMO_TAG) -> list[Path]:
    """Write a small stand-in for every required file of ``tag``; returns the files written."""
    written = []
    for expected in profile.expected(tag):
        path = staging / str(tag) / expected.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"relbot demo: {expected.path} ({expected.role})\n", encoding="utf-8")
        written.append(path)
    return written


def _folders(config: Config) -> dict[str, Path]:
    storage = config.model.storage
    return {"staging": config.path(storage.staging), "public": config.path(storage.public)}


def make_demo_folders(config: Config) -> None:
    """The rehearsal makes its own staging and public folders (a config file never does:
    a mistyped path must not become a folder nobody uploads to).

    Raises :class:`RelbotError` naming the folder when it cannot be made.
    """
    for name, folder in _folders(config).items():
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise RelbotError(f"storage.{name}: cannot create {folder} ({err.strerror}).") from err


def _data(config: Config) -> list[Path]:
    """Everything the rehearsal writes: the folders, the state file and what sits beside it."""
    state = config.state_path
    suffixes = ("-wal", "-shm", ".lock", ".recorded")
    beside = [state.with_name(state.name + suffix) for suffix in suffixes]
    folders = _folders(config)
    work = Path(default_work(os.path.realpath(folders["public"])))  # the bot's own copies
    return [*folders.values(), work, state, *beside, state.with_name(CACHE_NAME)]


def reset_demo(config: Config) -> list[Path]:
    """Delete the rehearsal's folders and state so that the next ``relbot run`` starts it
    again; returns what was deleted. Only for the built-in default.

    Raises :class:`RelbotError` (``StateLocked``) while a bot runs on the state file.
    """
    assert config.origin == BUILT_IN, "only the built-in default's data is the demo's"
    present = [path for path in _data(config) if path.exists() or path.is_symlink()]
    if not present:
        return []
    lock = OwnerLock(config.state_path)
    lock.acquire()  # a running demo holds it: refused, naming its pid
    try:
        for path in present:
            if path == lock.path:
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
    finally:
        lock.release()
    lock.path.unlink(missing_ok=True)
    for parent in {path.parent for path in present} - {config.base}:
        with contextlib.suppress(OSError):  # relbot-data/, unless something else is in it
            parent.rmdir()
    return sorted({_top(config, path) for path in present})


def _top(config: Config, path: Path) -> Path:
    """``relbot-data`` for anything in it: what the reset reports as deleted."""
    try:
        return Path(path.relative_to(config.base).parts[0])
    except ValueError:
        return path


def demo_state(config: Config) -> str:
    """Where the rehearsal is, in one sentence, with how to start it again."""
    tag = DEMO_TAG
    if not config.state_path.exists():
        return (
            f"not started in {config.base}: relbot run (or make run) stages the demo release "
            f"{tag} in {_folders(config)['staging'] / str(tag)}/."
        )
    return (
        f"{describe_demo(config)} Its data is in {config.state_path.parent}/; relbot demo "
        f"--reset deletes it, and the next relbot run stages {tag} again."
    )


def describe_demo(config: Config) -> str:
    """What became of the demo release: published, under way, or staged."""
    tag = DEMO_TAG
    store = StateStore(config.state_path)
    try:
        state = store.release(tag)
        events = len(store.events(tag))
    finally:
        store.close()
    if state.is_published and state.published_at is not None:
        at = when(state.published_at)
        return f"The demo release {tag} was published by {state.published_by} at {at}."
    if events:
        return f"The demo release {tag} is under way ({events} events recorded)."
    return f"The demo release {tag} is staged; nothing was said about it yet."


def published_note(config: Config) -> str | None:
    """For the start banner: the sentence saying the rehearsal is over, or None."""
    if config.origin != BUILT_IN or not config.state_path.exists():
        return None
    store = StateStore(config.state_path)
    try:
        published = store.release(DEMO_TAG).is_published
    finally:
        store.close()
    if not published:
        return None
    return f"{describe_demo(config)} relbot demo --reset starts the rehearsal again."


def demo_banner(config: Config) -> str | None:
    """For the console's start banner: where the rehearsal is, in one sentence with what to
    type next; None for a config of one's own. "Staged, try /ready" only while nothing was
    recorded about the demo release: after a restart mid-publish, the publish resumes by
    itself, and a /ready then would only be refused."""
    if config.origin != BUILT_IN:
        return None
    tag = DEMO_TAG
    staging = config.path(config.model.storage.staging) / str(tag)
    state = None
    if config.state_path.exists():
        store = StateStore(config.state_path)
        try:
            state, events = store.release(tag), len(store.events(tag))
        finally:
            store.close()
    if state is not None and state.is_published:
        return published_note(config)
    if state is not None and state.publishing is not None:
        return (
            f"The demo release {tag} is being published (confirmed by {state.publisher}); it "
            f"goes on by itself: watch the channel, or /status {tag}. relbot demo --reset "
            "starts the rehearsal again."
        )
    if state is not None and events:
        return (
            f"{describe_demo(config)} /status {tag} shows where it is; relbot demo --reset "
            "starts the rehearsal again."
        )
    if staging.is_dir():
        return (
            f"A demo release {tag} is staged in {staging}/. Try: /status {tag}, "
            f"/ready source {tag}, /ready docs {tag}, /as steve, /ready windows {tag}, "
            f"/as ned, /ready macos {tag}, /as hugo, /publish {tag}, then the confirm line it "
            "prints."
        )
    return None
