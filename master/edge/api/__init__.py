"""API: the Edge REST routes and the edge WebSocket endpoint (Quart), thin over the rooms."""
