"""The pure core: release tags, profiles, readiness and publish plans. No I/O here.

The lowest layer but the basics: it may import ``bot.errors`` only, and no I/O library."""
