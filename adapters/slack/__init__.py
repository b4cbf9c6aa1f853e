"""The Slack platform: slash commands into the gate, Block Kit out to the release channel.

This package imports nothing itself: ``relbot slack-manifest`` loads
:mod:`adapters.slack.commands` only, without the Slack SDK.
"""
