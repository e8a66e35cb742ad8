"""Slack as a chat platform for the gateway (docs/slack.md)."""

from adapters.slack.bot import SlackBot
from adapters.slack.platform import SlackPlatform, web_client
from adapters.slack.settings import SlackSettings

__all__ = ["SlackBot", "SlackPlatform", "SlackSettings", "web_client"]
