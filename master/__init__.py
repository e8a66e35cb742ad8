"""The RAWP master server: pairing, config scopes, Edge API and the relay (Quart)."""
