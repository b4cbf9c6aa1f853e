"""The service layer: the gate (the one front door the chat platforms call), the command
handlers, the publish pipeline, the observer that scans staging, the reporter that talks to
the channel, and what only they use. It may import the basics, ``bot.config`` and
``bot.team``, the pure rules (:mod:`bot.domain`) and the ports (:mod:`bot.ports`); it knows
the outside world only through those ports, and never names storage, the journal,
python.org, Sigstore, the web side, the composition or an adapter."""
