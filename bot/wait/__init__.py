"""``relbot wait``: the judge that says whether a release reached what was asked
(``judge``) and where it reads the release from (``sources``: the journal, a running bot's
board, or a scan of its own). Composition-level: ``sources`` builds storage through
:mod:`bot.app`, so it may import ``bot.app`` and everything below the adapters, never an
adapter."""
