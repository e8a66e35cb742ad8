"""The Edge API and the master's data plane (RAWP §9): users, sessions, the relay."""
