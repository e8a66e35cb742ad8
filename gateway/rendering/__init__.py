"""Rendering: one session's DPS frames become chat messages (the renderer and its parts)."""
