"""Storage backends: where staging and public folders live (local folders, or SFTP), and the
algorithms written once over them (the freeze, the promotion, the tidy, the lock). An I/O
implementation: it may import the basics, :mod:`bot.domain` and :mod:`bot.ports`, nothing
above them."""
