"""Links: the master's WebSocket to each client and the duties on every frame crossing it
(the data plane, the security policy)."""
