"""Test doubles of services that cannot run here (python.org, its download site, the forum)."""
