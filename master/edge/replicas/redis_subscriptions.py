"""The one Redis subscription of a master replica's relay, and its reader (issue 9, 14 §6).

Rules:

1. One pub/sub connection per replica. `subscribe` returns once Redis has confirmed the
   channel (the reader sees the confirmation), so a caller that replays from Redis after it
   cannot miss a message published in between. Calls are serialized by a lock.
2. `unsubscribe(channel, still_needed)` leaves a channel unless `still_needed()` says, under
   the same lock, that a socket or link came back for it meanwhile.
3. The reader hands every message to `handle(channel, data)` in the order Redis sent them,
   one at a time; a handler that must wait (a hand-off to a client) starts its own owned
   task. A handler's failure is logged with its traceback and the reader goes on; a Redis
   failure is logged and the reader reconnects after a short wait.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis
from redis.exceptions import RedisError

log = logging.getLogger("rawp.master.edge.redis_subscriptions")

Handler = Callable[[str, str], Awaitable[None]]
CONFIRM_WITHIN = 10.0  # seconds


class Subscriptions:
    def __init__(self, redis: Redis, handle: Handler) -> None:
        self._pubsub = redis.pubsub()
        self._handle = handle
        self._lock = asyncio.Lock()
        self._confirmed: dict[str, asyncio.Event] = {}
        self.channels: set[str] = set()

    async def open(self, *channels: str) -> None:
        """The replica's own channels, before the reader starts (which needs a subscription);
        their confirmation is not awaited: nothing is replayed after them."""
        await self._pubsub.subscribe(*channels)
        self.channels.update(channels)

    async def subscribe(self, channel: str) -> None:
        """Rule 1."""
        async with self._lock:
            if channel in self.channels:
                return
            confirmed = self._confirmed[channel] = asyncio.Event()
            await self._pubsub.subscribe(channel)
            try:
                await asyncio.wait_for(confirmed.wait(), CONFIRM_WITHIN)
            finally:
                self._confirmed.pop(channel, None)
            self.channels.add(channel)

    async def unsubscribe(self, channel: str, still_needed: Callable[[], bool]) -> None:
        """Rule 2."""
        async with self._lock:
            if still_needed() or channel not in self.channels:
                return
            self.channels.discard(channel)
            try:
                await self._pubsub.unsubscribe(channel)
            except RedisError as exc:  # the connection is gone: so is the subscription
                log.info("relay: unsubscribe from %s failed: %s", channel, exc)

    async def run(self) -> None:
        """Rule 3, until cancelled."""
        while True:
            try:
                message = await self._pubsub.get_message(timeout=1.0)
            except RedisError as exc:
                log.warning("relay: Redis subscription failed, retrying: %s", exc)
                await asyncio.sleep(0.5)
                continue
            if message is None:
                continue
            channel, kind = message["channel"], message["type"]
            if kind == "subscribe":
                confirmed = self._confirmed.get(channel)
                if confirmed is not None:
                    confirmed.set()
                continue
            if kind != "message":
                continue
            try:
                await self._handle(channel, message["data"])
            except Exception:  # one bad message must not stop the replica's relay
                log.exception("relay: could not handle a message on %s", channel)

    async def close(self) -> None:
        await self._pubsub.aclose()
