"""``relbot wait``: the judge that says whether a release reached what was asked
(``judge``) and where it reads the release from (``sources``: the journal, a running bot's
board, or a scan of its own). Composition-level: ``sources`` builds storage through
:mod:`bot.app`, so it may import every layer below the composition, never an adapter."""
