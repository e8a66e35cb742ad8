"""The chat gateway: a non-streaming RAWP edge for chat platforms (RAWP §8.3–§8.5)."""
