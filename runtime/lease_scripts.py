"""The two Lua scripts every Redis lease in RAWP uses, written once (text only: this package
never talks to Redis). A lease is a key holding its owner's id, set with `SET NX PX`:

- `RENEW` (KEYS[1] the lease, ARGV[1] me, ARGV[2] lease ms) extends it only while it is still
  ours → 1, else 0: a replica never renews a lease another has taken since.
- `RELEASE` (KEYS[1] the lease, ARGV[1] me) deletes it only while it is ours → 1, else 0.

Users: the master's session leases (master/edge/replicas/redis_scripts.py), the gateway's renderer
leases (gateway/replicas/cluster_redis.py) and its Discord shard leases
(adapters/discord/shard_leases.py).
"""

RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
