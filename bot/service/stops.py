"""The words of a stopped publish: what stopped it and its one way out, the same in the
channel's notice, the confirm reply, ``/status`` and every command refused meanwhile."""

from __future__ import annotations

from bot.domain.history import Stop
from bot.domain.tags import ReleaseTag
from bot.domain.text import listing
from bot.domain.windows_index import INDEX_STEP


def stop_text(tag: ReleaseTag, stop: Stop) -> str:
    """The one sentence of a stopped publish, with its way out: the channel's notice, the
    confirm reply, ``/status`` and every refused command use these words."""
    head = f"Publishing {tag} stopped at {stop.step}: {stop.reason.rstrip('.')}."
    if not stop.public:
        return (
            f"{head} Nothing of it is public: /abort {tag} cancels it (staging still holds "
            f"the files as uploaded), then /publish {tag} starts again."
        )
    if stop.step == INDEX_STEP:
        return (
            f"{head} Every other file is public. To finish, stage {listing(list(stop.files))} "
            f"again, built against the live index, have them claimed with /ready, then "
            f"/publish {tag} offers to publish them; /publish {tag} now offers to finish "
            "without replacing the live index."
        )
    if stop.files:
        return (
            f"{head} Files of it are public already, so it cannot be aborted: /publish {tag} "
            f"offers to finish without {listing(list(stop.files))} (stage "
            f"{'it' if len(stop.files) == 1 else 'them'} again later as late files)."
        )
    return (
        f"{head} Files of it are public already, so it cannot be aborted: /publish {tag} "
        "offers to finish with the files that are public, the others left out (stage them "
        "again later as late files)."
    )
