"""Reading adapter settings from the environment: what the platforms' settings share."""

from __future__ import annotations


def switch(raw: str | None, name: str) -> bool | None:
    """`1/true/yes/on` → True, `0/false/no/off` → False, unset or empty → None (automatic)."""
    text = (raw or "").strip().casefold()
    if not text:
        return None
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be true or false (or empty for automatic), not {raw!r}")
