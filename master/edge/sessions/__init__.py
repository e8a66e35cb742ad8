"""Sessions: the edge sessions and nodes a user sees, and the client links this replica holds."""
