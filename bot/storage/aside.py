"""Where a confirmed publish keeps the files that will replace live ones (the install index)
between the confirmation and the moment they replace the live copies.

They leave the release's staging folder before promotion, so the folder still holds exactly
the files that promotion moves (a new release's folder then becomes public by one rename), and
whatever is uploaded into staging afterwards cannot take their place. The folder is inside
staging (same filesystem as public, so the final rename is atomic), and its name is not a
release tag, so scans and listings never look at it.
"""

from __future__ import annotations

ASIDE_FOLDER = ".relbot-aside"  # staging/.relbot-aside/TAG/NAME
ASIDE_MODE = 0o700  # only the bot's account may enter it: uploaders cannot swap a file there
