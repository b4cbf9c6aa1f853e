"""The service layer: the gate (the one front door the chat platforms call), the command
handlers, the publish pipeline, the observer that scans staging, the reporter that talks to
the channel, and what only they use. It may import the basics, ``bot.config`` and
``bot.team``, the pure rules (:mod:`bot.domain`), the ports (:mod:`bot.ports`) and, until
signing has a port of its own, ``bot.signing.login`` and ``bot.signing.signer``; it knows
the rest of the outside world only through those ports, and never names storage, the
journal, python.org, the web side, the composition or an adapter."""
