"""Storage: the gateway's database, its schema, and the tables kept in it."""
