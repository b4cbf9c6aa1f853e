"""Sigstore: the verifier of staged signatures (``verifier``), the signer (``signer``) and the
out-of-band login that hands the bot an identity token at the confirmation (``login``). I/O
implementations: they may import the basics, ``bot.config``, :mod:`bot.domain` and
:mod:`bot.ports`, nothing above them. Sigstore itself is heavy and imported when used."""
