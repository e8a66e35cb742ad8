"""The client's side of its master (RAWP §3–§4): pairing and config sync, the tokens the
master presents, and the WebSocket tickets it issues."""
