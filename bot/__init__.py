"""relbot: stage release artifacts, publish them all at once.

The package itself holds only the version, which every layer may read; it may import nothing
of relbot."""

# The one place the version is written: pyproject.toml reads it (dynamic version), and so do
# `relbot --version`, /metrics and the log line at start.
__version__ = "0.1.0"
