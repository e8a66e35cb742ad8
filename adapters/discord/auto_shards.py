"""Running the shards the Redis leases give this replica (DISCORD_SHARD_IDS=auto, issue 19 §4).

discord.py's AutoShardedClient takes its shard ids once, at construction, and has no public way
to add or drop one shard while it runs. So when the held set changes (a replica joined or died,
shard_leases.py rule 3) the client is restarted with the new list: close, `clear()` (discord.py's
"re-open"), set `shard_ids`, log in, connect. The other choice, one Client per shard, would
split the command tree, the button handlers and the REST session over several clients; a
restart keeps one of each, and reassignments are rare (a replica starts, stops or dies).

Rules:
- The client logs in before any shard is held, so a replica with none still posts (REST).
- During a restart the platform is offline (`platform.online` cleared): posts wait for the new
  login instead of failing; the setup hook sets it again.
- Zero held shards: logged in, not connected (an empty `shard_ids` would mean "all" to
  discord.py).
- A connection that ends on its own (not because of a restart) is restarted at the next round.
- On stop the client is closed again after the loop (a restart racing close() must not leave
  connections open) and every lease is released, so the survivors take the shards within one
  round.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import discord

from adapters.discord.shards import ShardPlan
from runtime.tasks import TaskOwner

if TYPE_CHECKING:
    from adapters.discord.shard_leases import ShardLeases

log = logging.getLogger(__name__)


class AutoShards:
    """Keeps `client` connected to exactly the shards `leases` holds, until `closing` is set."""

    def __init__(
        self,
        client: discord.AutoShardedClient,
        leases: ShardLeases,
        set_plan: Callable[[ShardPlan], None],
        plan: ShardPlan,
        online: asyncio.Event,
    ) -> None:
        self.client = client
        self.leases = leases
        self._set_plan = set_plan  # the bot's plan: its setup hook syncs commands on shard 0
        self.plan = plan
        self.online = online
        self.running: tuple[int, ...] | None = None  # None: not logged in yet
        self._connection: asyncio.Task | None = None

    async def run(self, token: str, closing: asyncio.Event, logged_in: asyncio.Event) -> None:
        async with TaskOwner("discord shards", log) as owner:
            try:
                while not closing.is_set():
                    held = await self.leases.step()
                    if closing.is_set():  # close() ran meanwhile: no restart after it
                        break
                    ended = self._connection is not None and self._connection.done()
                    if held != self.running or (held and ended):
                        await self._restart(owner, token, held)
                        logged_in.set()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self.leases.interval_s):
                            await closing.wait()
            finally:
                # A restart racing close() may have connected again: close what is open now.
                if self._connection is not None:
                    self._connection.cancel()
                await self.client.close()
                await self.leases.close()

    async def _restart(self, owner: TaskOwner, token: str, held: tuple[int, ...]) -> None:
        log.info(
            "discord: running shards %s of %d", ",".join(map(str, held)) or "none", self.plan.count
        )
        self.online.clear()
        if self.running is not None:
            # Cancelled first: discord.py's launch_shard retries a failed connect forever
            # without looking at is_closed(), so a client closed mid-launch never returns.
            if self._connection is not None:
                self._connection.cancel()
                try:
                    await self._connection
                except asyncio.CancelledError:
                    pass  # what we asked for
                except Exception:  # the old connection's own failure: said once, then replaced
                    log.warning("discord: the replaced shard connection had failed", exc_info=True)
            await self.client.close()
            self.client.clear()
            # close() closed the connector with the session; login() makes a new one only
            # when none is set.
            self.client.http.connector = discord.utils.MISSING
            # login() runs discord.py's internal setup (a new event queue for the shards) only
            # on the first login; the old queue still holds close()'s clean_close item, which
            # would end the next connect() as soon as its shards were launched. Run it again.
            await self.client._async_setup_hook()
        self.plan = self.plan.with_ids(held)
        self._set_plan(self.plan)
        self.client.shard_ids = list(held) or None
        await self.client.login(token)  # the setup hook: online again, commands if shard 0
        self.running = held
        self._connection = (
            owner.spawn(self.client.connect(), name="discord shards") if held else None
        )
