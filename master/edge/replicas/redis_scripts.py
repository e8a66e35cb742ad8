"""The Lua scripts of the Redis relay (master/edge/replicas/redis_relay.py), each run atomically by
Redis, and how stream positions compare."""

from __future__ import annotations

from dataclasses import dataclass

SESSION_TTL_MS = 24 * 3600 * 1000  # what an idle session leaves in Redis lives a day at most
NODE_FRAMES_KEPT = 64  # node frames kept per node for edges that reconnect


@dataclass(frozen=True)
class Keys:
    """Every key and channel of the relay under one prefix."""

    prefix: str

    def session(self, session_id: str, what: str) -> str:
        return f"{self.prefix}s:{{{session_id}}}:{what}"  # {…}: one cluster slot a session

    def own(self, session_id: str) -> str:
        return f"{self.prefix}own:{{{session_id}}}"

    def node_frames(self, node_id: str) -> str:
        return f"{self.prefix}n:{node_id}"

    def to_edges(self, session_id: str) -> str:
        return f"{self.prefix}e:{session_id}"

    def to_client(self, session_id: str) -> str:
        return f"{self.prefix}c:{session_id}"

    def replies(self, replica: str) -> str:
        return f"{self.prefix}r:{replica}"

    @property
    def bus(self) -> str:
        return self.prefix + "bus"


# KEYS: own, seen, order, frames, cursor. ARGV: me, channel, keep, ttl_ms, lease_ms, then a
# (message_id, text, is_cursor) triple per frame, in order. Returns how many frames were new
# (repeats by message_id are dropped), or -1 when the lease is another replica's (fencing).
# The new frames leave in one message, a JSON array [stream id, text, …]: per-frame costs on
# both ends of Redis are paid per batch, and the stream ids order live frames against a replay.
PUBLISH_SCRIPT = """
local owner = redis.call('GET', KEYS[1])
if owner == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[5])
elseif owner ~= ARGV[1] then
  return -1
end
local out, keep = {}, tonumber(ARGV[3])
for i = 6, #ARGV, 3 do
  local id = ARGV[i]
  if redis.call('SADD', KEYS[2], id) == 1 then
    redis.call('RPUSH', KEYS[3], id)
    if redis.call('LLEN', KEYS[3]) > keep then
      redis.call('SREM', KEYS[2], redis.call('LPOP', KEYS[3]))
    end
    local at = redis.call('XADD', KEYS[4], 'MAXLEN', '~', keep, '*', 'm', id, 't', ARGV[i + 1])
    if ARGV[i + 2] == '1' then redis.call('SET', KEYS[5], id) end
    out[#out + 1] = at
    out[#out + 1] = ARGV[i + 1]
  end
end
if #out == 0 then return 0 end
for k = 2, 5 do redis.call('PEXPIRE', KEYS[k], ARGV[4]) end
redis.call('PUBLISH', ARGV[2], cjson.encode(out))
return #out / 2
"""


def stream_position(entry_id: str) -> tuple[int, int]:
    """A Redis stream entry id ("1733200000000-3") as something that compares in order."""
    millis, _, sequence = entry_id.partition("-")
    return int(millis), int(sequence or 0)
