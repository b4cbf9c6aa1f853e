"""The pure core: release tags, profiles, readiness and publish plans. No I/O here."""
