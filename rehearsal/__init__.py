"""``relbot rehearse``: release day on one machine, with signatures required.

It lives beside ``tests/`` in a clone, not in the installed package: it drives the test
doubles of the outside world (the private Sigstore instance, python.org, Discourse, the
download site) as they are, and an installed relbot has neither them nor their test-only
dependencies. ``bot.cli`` finds the clone from where ``bot`` was imported and says in one
sentence when it is not there.
"""
