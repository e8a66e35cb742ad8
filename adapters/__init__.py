"""Chat-platform adapters (Discord, Slack, console) implementing gateway.ChatPlatform."""
