"""relbot: stage release artifacts, publish them all at once."""

__version__ = "0.1.0"
