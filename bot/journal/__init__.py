"""The journal: every release's events in a SQLite file (:mod:`~bot.journal.store`, the
:class:`bot.ports.Journal` the gate writes) and the read-only view of it that ``relbot wait``
uses (:mod:`~bot.journal.reader`). An I/O implementation: it may import
the basics, :mod:`bot.domain` and :mod:`bot.ports`, nothing above them."""
