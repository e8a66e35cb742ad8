"""Access: who may use the Edge API (user tokens, E-AUTH) and its sockets (single-use tickets)."""
