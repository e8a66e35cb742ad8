"""The lock that keeps replicas sharing one PostgreSQL database from migrating it twice, written
once for the master and the gateway (issue 29 §4; text only: this package never talks to a
database, like runtime.lease_scripts for Redis).

A migration runs in one transaction that first takes a transaction-scoped advisory lock
(`TAKE`, with the migrating program's key). Replicas starting together on a new database then
take turns: the first creates the tables and records the versions, the others wait for its
commit and find the work done. The lock ends with the transaction, also when a replica dies in
the middle (its connection closes), so nothing is ever left locked. SQLite needs no such lock:
a migrating write transaction holds the file's write lock (each program's storage rules).

Users: master.storage.migrations and gateway.storage.store_schema.
"""

TAKE = "SELECT pg_advisory_xact_lock(:key)"

# Each program its own key: their tables differ, so a master and a gateway on one database
# need not wait for each other.
MASTER = 0x7261_7770_6D73  # "rawpms"
GATEWAY = 0x7261_7770_6777  # "rawpgw" (the gateway's key since issue 19: kept)
