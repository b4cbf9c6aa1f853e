"""The Slack platform: slash commands into the gate, Block Kit out to the release channel.

It translates and renders only: who may do what is decided by the gate.

- :mod:`~adapters.slack.platform`: ``SlackPlatform``, slack-bolt wired up (Socket Mode or
  HTTP), started and stopped;
- :mod:`~adapters.slack.listeners`: a slash command acknowledged, asked of the gate,
  answered, once;
- :mod:`~adapters.slack.confirming`: the plan's Publish button and the login dialog of a plan
  that signs;
- :mod:`~adapters.slack.blocks`: Block Kit, the gate's messages rendered (no SDK, no I/O);
- :mod:`~adapters.slack.channel`: the release channel, and what only the operator can fix;
- :mod:`~adapters.slack.check`: ``relbot check`` on Slack;
- :mod:`~adapters.slack.commands`: the commands' names and the app manifest (no SDK).

This package imports nothing itself: ``relbot slack-manifest`` loads
:mod:`adapters.slack.commands` only, without the Slack SDK. Of relbot, its modules may import
``adapters.platform`` and everything below the adapters, never the Discord platform nor the
composition.
"""
