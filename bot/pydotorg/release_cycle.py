"""The release cycle read afresh from its URL (python.org's release-cycle JSON), the copy
kept for the next start. Only :func:`refresh` ever reaches the network; ``relbot run`` (chat
platforms) and ``relbot check`` call it. Without the network the config reads the last copy,
or the shipped one (:mod:`bot.config.cycle_copy`)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx

from bot.config.cycle_copy import MAX_BYTES, CycleCopy, is_url, local_copy
from bot.config.values import url_problem  # the config's one rule for URLs
from bot.domain.release_cycle import parse_release_cycle
from bot.errors import ConfigError


def refresh(
    source: str, base: Path, cache: Path, *, timeout: float = 10.0
) -> tuple[CycleCopy, str | None]:
    """Read ``source`` afresh when it is a URL and keep the copy in ``cache``; on failure fall
    back to :func:`local_copy`. Returns the copy in use and, when the URL failed, why (one
    sentence). A file ``source`` is simply read."""
    if not is_url(source):
        return local_copy(source, base, cache), None
    try:
        content = _download(source, timeout)
        cycle = parse_release_cycle(content, source)
    except (httpx.HTTPError, ConfigError) as err:
        why = str(err) if isinstance(err, ConfigError) else f"{type(err).__name__}: {err}"
        problem = f"release_cycle: {source} could not be read ({why})."
        return local_copy(source, base, cache), problem
    _write_atomically(cache, content)
    return CycleCopy(cycle, source, time.time()), None


def _download(source: str, timeout: float) -> bytes:
    """The body at ``source``, at most :data:`MAX_BYTES` of it (the rest is never read); a
    redirect is followed only to an address the config would accept (no https → http)."""
    with (
        httpx.Client(timeout=timeout, follow_redirects=True) as client,
        client.stream("GET", source) as response,
    ):
        if str(response.url) != source and (problem := url_problem(str(response.url))):
            raise ConfigError(f"a redirect was refused: {problem}")
        response.raise_for_status()
        chunks, size = [], 0
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_BYTES:
                raise ConfigError(f"it answered more than {MAX_BYTES} bytes")
    return b"".join(chunks)


def _write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` in one rename, so a crash never leaves half a copy behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    part.write_bytes(data)
    os.replace(part, path)
