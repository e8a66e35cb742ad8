"""The RAWP local client: runs agents in a workspace on the user's machine (Quart)."""
