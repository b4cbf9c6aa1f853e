"""The Discord platform (discord.py 2.x): the contract's commands as slash commands in one
server, replies to whoever typed them, and the release channel, where each release's summary
is an embed edited in place and notices and announcements are plain messages.

The adapter only translates: an interaction becomes ``(Discord user ID, command line)`` for
:meth:`bot.service.gate.Gate.handle`, and the gate's reply is rendered back. Who may do what is the
gate's business, so no command carries ``default_permissions``.

- :mod:`~adapters.discord.platform`: ``DiscordPlatform``, discord.py wired up, started and
  stopped, and each interaction answered;
- :mod:`~adapters.discord.client`: the client, which knows its platform;
- :mod:`~adapters.discord.commands`: the slash commands, their tree, their sync;
- :mod:`~adapters.discord.buttons`: the plan's buttons and the login dialog of a plan that
  signs;
- :mod:`~adapters.discord.embeds`: the gate's messages rendered (no I/O);
- :mod:`~adapters.discord.channel`: the release channel, and what only the operator can fix;
- :mod:`~adapters.discord.check`: ``relbot check`` on Discord;
- :mod:`~adapters.discord.errors`: what goes wrong with Discord.

Every module imports discord.py as ``import discord``, absolutely: this package is
``adapters.discord`` and never stands for the library. Of relbot, it may import
``adapters.platform`` and everything below the adapters, never the Slack platform nor the
composition.
"""
