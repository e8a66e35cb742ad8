"""Relay: where frames meet the edge sockets of this process (the relay seam, its in-process
implementation, each socket's queue) and the node notices offered through it."""
