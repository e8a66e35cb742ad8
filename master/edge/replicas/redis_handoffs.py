"""Edge frames handed to the replica that holds the session's client link (redis_relay rule 4).

Rules:

1. Asking (`ask`): the frame is published on the session's client channel with this replica's
   reply channel and a deadline on the wall clock (replicas share it through NTP). Nobody
   listening → None (the relay may take the session over); no answer within the deadline (a
   frozen or dying holder) → False; else the holder's answer.
2. Taking (`take`, on the holder): a hand-off whose deadline has passed is dropped; otherwise
   the frame goes to the client link, and the answer says whether the link wrote it.
3. An answer (`answered`) settles the one ask waiting for it; a late or unknown one is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:
    from master.edge.replicas.redis_relay import RedisRelay

log = logging.getLogger("rawp.master.edge.redis_relay")


class HandOffs:
    def __init__(self, relay: RedisRelay, deliver_seconds: float) -> None:
        self._relay = relay
        self._deliver = deliver_seconds
        self._replies: dict[str, asyncio.Future[bool]] = {}  # hand-offs awaiting an answer

    async def ask(self, session_id: str, text: str) -> bool | None:
        """Rule 1: the holder's answer, False when it did not answer in time, None when no
        replica listens for the session's client."""
        relay = self._relay
        token = secrets.token_hex(8)
        answer = self._replies[token] = asyncio.get_running_loop().create_future()
        try:
            message = {
                "id": token,
                "text": text,
                "reply": relay.keys.replies(relay.me),
                "until": time.time() + self._deliver,  # wall clock: replicas share it (NTP)
            }
            listeners = await relay.redis.publish(
                relay.keys.to_client(session_id), orjson.dumps(message).decode()
            )
            if not listeners:
                return None
            try:
                return await asyncio.wait_for(answer, self._deliver + 1.0)
            except TimeoutError:
                log.warning("session %s: the holder did not take an edge frame", session_id)
                return False
        finally:
            self._replies.pop(token, None)

    async def take(self, session_id: str, data: str) -> None:
        """Rule 2, the holder's side (an owned task: the link may wait for a reattach)."""
        message = orjson.loads(data)
        ok = False
        client = self._relay.client_of(session_id)
        if time.time() >= message["until"]:
            log.warning("session %s: an edge frame arrived after its deadline", session_id)
        elif client is not None:
            ok = await client.send(message["text"])
        answer = orjson.dumps({"answer": message["id"], "ok": ok}).decode()
        await self._relay.redis.publish(message["reply"], answer)

    def answered(self, data: str) -> None:
        """Rule 3."""
        answer = orjson.loads(data)
        waiting = self._replies.get(answer["answer"])
        if waiting is not None and not waiting.done():
            waiting.set_result(bool(answer["ok"]))
