"""Edge sockets attaching to a session through Redis, and the live frames after (redis_relay
rule 3).

Rules:

1. A socket attaching is replayed *after* the session's channel is confirmed, with the live
   frames arriving meanwhile held for it; after the replay, a held frame is offered only when
   the replay did not hold it. Then the socket goes live, with no await in between: no gap, no
   repeat.
2. Without a cursor the socket gets the greeting. With a cursor the session's stream holds, it
   gets the frames after it plus the node frames published since, merged in order (both
   streams' ids are Redis times), and no greeting. With one the stream does not hold, the
   client is asked (relay rule 4).
3. A live frame reaching a socket is dropped while it is at or before the stream position the
   replay reached (the reply to XRANGE can overtake the published message), and while its
   `message_id` is among the client's replay's, until the first newer frame.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson

from master.edge.relay.edge_socket import EdgeSocket
from master.edge.relay.relay import NOT_A_CURSOR, history_frame, kind_and_id, resume_from_client
from master.edge.replicas.redis_scripts import stream_position

if TYPE_CHECKING:
    from master.edge.replicas.redis_relay import RedisRelay

Position = tuple[int, int]


class Attachments:
    """What rule 3 keeps on this replica: frames held for the sockets attaching, and what the
    replay of each attached socket already had."""

    def __init__(self, relay: RedisRelay) -> None:
        self._relay = relay
        self._held: dict[str, dict[EdgeSocket, list[tuple[str, str]]]] = {}  # attaching
        self._horizons: dict[EdgeSocket, Position] = {}  # last stream id replayed
        self._skips: dict[EdgeSocket, set[str]] = {}  # ids the client's replay had (rule 3)

    def attaching(self, session_id: str) -> bool:
        return session_id in self._held

    async def attach(
        self, edge: EdgeSocket, last_message_id: str | None, go_live: Callable[[EdgeSocket], None]
    ) -> None:
        """Rules 1, 2: replay `edge`, offer what arrived meanwhile, then `go_live(edge)`."""
        session_id = edge.session_id
        held: list[tuple[str, str]] = []
        self._held.setdefault(session_id, {})[edge] = held
        try:
            await self._relay.subscriptions.subscribe(self._relay.keys.to_edges(session_id))
            horizon, skip = await self._replay(edge, last_message_id)
            for at, text in held:  # arrived while replaying: only what the replay did not hold
                if horizon is not None and stream_position(at) <= horizon:
                    continue
                kind, message_id = kind_and_id(text)
                if skip and message_id in skip:
                    continue
                if kind not in NOT_A_CURSOR:
                    skip = set()  # past the client's replay: later frames are all new
                edge.offer(text)
            # A frame the replay held may still be on its way from the channel (the reply to
            # XRANGE can overtake the published message): the horizon drops it on arrival.
            if horizon is not None:
                self._horizons[edge] = horizon
            if skip:
                self._skips[edge] = skip
            go_live(edge)
        finally:
            holding = self._held.get(session_id, {})
            holding.pop(edge, None)
            if not holding:
                self._held.pop(session_id, None)

    async def _replay(
        self, edge: EdgeSocket, last_message_id: str | None
    ) -> tuple[Position | None, set[str]]:
        """Greet or replay `edge` (rule 2); returns the stream position the replay reached and
        the ids of a replay from the client."""
        relay, session_id = self._relay, edge.session_id
        if not last_message_id:
            for text in await relay.greeting_texts(session_id):
                edge.offer(text)
            return None, set()
        entries = await relay.redis.xrange(relay.keys.session(session_id, "frames"))
        horizon = stream_position(entries[-1][0]) if entries else None
        ids = [fields["m"] for _, fields in entries]
        if last_message_id not in ids:
            kept = [fields["t"] for _, fields in entries]
            replayed = await resume_from_client(relay, edge, last_message_id, kept)
            return horizon, set(replayed)
        at = ids.index(last_message_id)
        since = entries[at][0]
        merged = [(stream_position(i), f["t"]) for i, f in entries[at + 1 :]]
        node_key = relay.keys.node_frames(edge.node_id)
        merged += [
            (stream_position(i), f["t"])
            for i, f in await relay.redis.xrange(node_key, min=f"({since}")
        ]
        merged.sort(key=lambda entry: entry[0])
        edge.replayed = len(merged)
        edge.offer(history_frame(session_id, last_message_id, len(merged)))
        for _, text in merged:
            edge.offer(text)
        return horizon, set()

    def deliver(self, session_id: str, data: str) -> None:
        """A batch of the session's frames from its channel, to the sockets attaching (held)
        and attached (rule 3)."""
        flat = orjson.loads(data)  # [stream id, text, …] from PUBLISH_SCRIPT
        frames = list(zip(flat[::2], flat[1::2], strict=True))
        for held in self._held.get(session_id, {}).values():
            held.extend(frames)
        for edge in self._relay.edges(session_id):
            for at, text in frames:
                if self._replayed_already(edge, at, text):
                    continue
                edge.offer(text)

    def _replayed_already(self, edge: EdgeSocket, at: str, text: str) -> bool:
        horizon = self._horizons.get(edge)
        if horizon is not None:
            if stream_position(at) <= horizon:
                return True  # replayed to this socket from the stream already
            del self._horizons[edge]  # past the replay: later frames are all new
        skip = self._skips.get(edge)
        if skip is not None:
            kind, message_id = kind_and_id(text)
            if message_id in skip:
                return True  # the client's replay had it
            if kind not in NOT_A_CURSOR:  # a reattached client's greeting: its replay follows
                del self._skips[edge]
        return False

    def forget(self, edge: EdgeSocket) -> None:
        """The socket detached: nothing of its replay is kept."""
        self._horizons.pop(edge, None)
        self._skips.pop(edge, None)
