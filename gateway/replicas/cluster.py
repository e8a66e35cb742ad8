"""Who renders a live session when several gateway replicas run (issue 19 §2–3).

A `Cluster` answers three questions for the conversation layer: may this replica render a
session (`claim`, `valid`), who renders it otherwise (`holder`), and how to ask that replica
to do something (`request`). Rules:

1. Without Redis there is one replica, `LocalCluster`: every claim succeeds, the holder is
   always this process, nothing is forwarded and nothing imports `redis` (today's gateway).
2. With Redis (`gateway.replicas.cluster_redis.RedisCluster`) a session is rendered by the replica
   that holds its lease; `claim` is `SET NX`, so one replica wins. A replica that cannot
   claim a session raises `HeldElsewhere` from the conversation layer, and the request is
   forwarded to the holder (gateway.replicas.cluster_routing).
3. Fencing: a renderer posts through a `FencedPlatform`, which checks before every call that
   changes the chat that this replica still holds the session's lease by its own clock
   (`valid`: the deadline of its last successful claim or renewal, kept short of the lease's
   real expiry). A replica that was paused or cut off past it raises `LeaseLost` instead of
   posting (a decoration — typing, status, a reaction — is skipped instead): another replica
   may render the session by now, and the chat would see both.
4. Placement: `placement(session_id, replicas)` is rendezvous (highest random weight)
   hashing, so every replica computes the same preferred renderer from the same list of live
   replicas, and sessions spread evenly; when a replica dies, only its sessions move.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

Handler = Callable[[str, dict], Awaitable[dict]]  # (kind, body) → reply body
Lost = Callable[[str], Awaitable[None]]  # session_id whose lease this replica lost

# Calls of a `ChatPlatform` that change what the chat shows: fenced (rule 3).
FENCED = frozenset(
    {
        "send_message",
        "send_keyed",
        "upload_file",
        "upload_keyed",
        "edit_message",
        "delete_message",
        "send_hidden",
        "send_ephemeral",
        "add_reaction",
        "remove_reaction",
        "trigger_typing",
        "set_status",
        "send_interaction",
        "send_interaction_keyed",
        "close_interaction",
    }
)


# Decorations (typing, status, reactions) of a fenced renderer are skipped without a word: they
# are best effort anyway (gateway.rendering.render), and the content call that follows stops
# the pump.
DECORATIONS = frozenset({"add_reaction", "remove_reaction", "trigger_typing", "set_status"})


class HeldElsewhere(Exception):
    """Another replica holds the session's lease: it renders the session (rule 2)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id} is rendered by another replica")
        self.session_id = session_id


class LeaseLost(Exception):
    """This replica no longer holds the session's lease: its renderer stops (rule 3)."""


class Unreachable(Exception):
    """A forwarded request got no answer in time (its replica is gone or stuck)."""


def placement(session_id: str, replicas: Iterable[str]) -> str | None:
    """Rule 4: the replica with the highest hash of (replica, session); None if none."""
    best, best_score = None, b""
    for replica in replicas:
        score = hashlib.blake2b(f"{replica}\x1f{session_id}".encode(), digest_size=8).digest()
        if best is None or score > best_score:
            best, best_score = replica, score
    return best


class LocalCluster:
    """Rule 1: one replica, which holds every session."""

    clustered = False
    me = "local"

    async def start(self, owner: Any, on_lost: Lost, handle: Handler) -> None:
        return None

    async def claim(self, session_id: str) -> bool:
        return True

    def holds(self, session_id: str) -> bool:
        return True

    def valid(self, session_id: str) -> bool:
        return True

    async def holder(self, session_id: str) -> str | None:
        return self.me

    async def holders(self, session_ids: list[str]) -> list[str | None]:
        return [self.me] * len(session_ids)

    async def release(self, session_id: str) -> None:
        return None

    async def replicas(self) -> list[str]:
        return [self.me]

    async def request(self, replica: str, kind: str, body: dict, timeout_s: float) -> dict:
        raise Unreachable(f"no replica {replica} in a single-process gateway")

    async def close(self) -> None:
        return None


class FencedPlatform:
    """A renderer's platform that refuses to change the chat once the lease is gone (rule 3).
    Everything else (limits, the prompt board, waits) passes through unchanged."""

    def __init__(self, platform: Any, cluster: Any, session_id: str) -> None:
        self._platform = platform
        self._cluster = cluster
        self._session_id = session_id

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._platform, name)
        if name not in FENCED:
            return value

        async def fenced(*args: Any, **kwargs: Any) -> Any:
            if not self._cluster.valid(self._session_id):
                if name in DECORATIONS:
                    return None
                raise LeaseLost(f"session {self._session_id}: lease lost, not posting")
            return await value(*args, **kwargs)

        return fenced
