"""The client links this replica holds, and what other replicas did (RAWP §5, §9.4).

Rules:

1. One process holds a session's client link (relay rule 6). Sessions a previous master
   process left alive are reattached when this one starts (`resume_all`), and any that no
   process holds when an edge connects to it (client_link `resume`). With several replicas
   (a shared relay, docs/scale-out.md) a replica holds only the sessions whose lease it wins;
   a sweep every few seconds takes over those whose holder died, reattaching after the last
   frame relayed, and edges on a replica that does not hold the session are served through
   the relay.
2. Link state changes are written through as transitions of `rawp.session_state`'s table,
   each a conditional write (`ConfigScopes.move_session`): DETACH while the client is away,
   ATTACH when it is back, TERMINATE when it is gone, and DETACH at shutdown (a RUNNING
   session only). A write the table refuses because the session is TERMINATED — another
   replica's DELETE won — makes this replica let the session go: TERMINATED is final (§5,
   issue 14 §5). A terminated session's edges are closed.
3. Every task here — each client link's loop, the takeover sweep — is a child of one
   `runtime.tasks.TaskOwner`, started in `start()` and closed in `close()`; a child's failure is
   logged there with its traceback.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from master.client_calls import ClientCaller
from master.edge.links.client_link import ClientLink
from master.edge.links.dataplane import DataPlane
from master.edge.links.link_pings import LinkPings
from master.edge.live import RelayedSession
from master.edge.relay.edge_socket import GOING_AWAY
from master.edge.relay.relay import Relay, Resumed
from master.services.config_scopes import ConfigScopes
from master.services.session_start import SessionStarter
from master.services.sockets import NodeSockets
from master.settings import EdgeSettings
from master.storage import edge_sessions as store
from master.storage.db import Database, utc
from rawp.clock import Clock
from rawp.config import Limits
from rawp.errors import RawpError
from rawp.session_state import SessionEvent, SessionState
from runtime.database_reach import Outage
from runtime.tasks import TaskOwner

log = logging.getLogger("rawp.master.edge.sessions")

# Longer than a start can take (the client call's 30 s timeout, then the data plane's WebSocket):
# an INIT session younger than this is being started by its replica (`_being_started`).
START_GRACE = timedelta(seconds=90)


class HeldLinks:
    """The sessions whose client link is held here (`live`), and the relay's `OwnerHooks`."""

    def __init__(
        self,
        *,
        db: Database,
        clock: Clock,
        config: ConfigScopes,
        calls: ClientCaller,
        starter: SessionStarter,
        relay: Relay,
        plane: DataPlane,
        sockets: NodeSockets,
        settings: EdgeSettings,
    ) -> None:
        self._db = db
        self._clock = clock
        self._config = config
        self._calls = calls
        self._starter = starter
        self._relay = relay
        self._plane = plane
        self._sockets = sockets
        self._settings = settings
        self.live: dict[str, RelayedSession] = {}  # the sessions whose client link is held here
        self._tasks = TaskOwner("edge sessions", log)  # rule 3
        self._sweeper: asyncio.Task | None = None
        self._pings = LinkPings()  # every client link's keepalive, from one task
        # seconds between takeover sweeps (several replicas only)
        self.sweep_interval = settings.takeover_sweep_seconds
        self._outage = Outage("the takeover sweep", db.url)  # issue 34 §2: logged once each way

    # --- links held here (rule 1) --------------------------------------------------------------

    def link(self, live: RelayedSession) -> ClientLink:
        async def may_hold() -> bool:  # client_link rule 6: the relay's lease says
            try:
                return await self._relay.claim(live.id)
            except Exception:  # Redis unreachable: another replica may hold it; do not contest
                log.warning("session %s: could not check its lease; letting go", live.id)
                return False

        async def let_go() -> None:  # …and when it does not: no state written, the holder has it
            await self.let_go(live.id)
            try:
                await self._relay.release(live.id)
            except Exception as exc:  # the lease lapses by itself; nothing else to undo
                log.warning("session %s: could not release its lease: %r", live.id, exc)

        return ClientLink(
            live,
            plane=self._plane,
            starter=self._starter,
            on_state=self._state,
            clock=self._clock,
            owner=self._tasks,
            may_hold=may_hold,
            let_go=let_go,
            deliver_within=self._settings.delivery_seconds,
            pings=self._pings,
        )

    def adopt(self, live: RelayedSession, link: ClientLink) -> None:
        live.link = link
        self.live[live.id] = live
        self._relay.bind_client(live.id, link)

        async def closer() -> None:  # §3.5: unregistering the node closes this session's link
            await self.forget(live, GOING_AWAY, "node unregistered")

        live.unregister = self._sockets.register(live.node_id, closer)

    async def resume(self, row: Any) -> RelayedSession:
        live = detached(row)
        link = self.link(live)
        self.adopt(live, link)
        await link.resume(cursor=await self._relay.cursor(live.id))
        return live

    async def resume_all(self) -> int:
        """Reattach every live session no process holds (rule 1): at start, so that its state
        stays true and its usage is counted even before an edge returns, and with several
        replicas on every sweep, so that a dead replica's sessions go on elsewhere."""
        now = self._clock.now()
        async with self._db.connect() as conn:
            rows = [
                row
                for row in await store.live_sessions(conn)
                if row.id not in self.live and not self._being_started(row, now)
            ]
        free = set(await self._relay.unowned([row.id for row in rows]))
        taken = 0
        for row in rows:
            if row.id in free and row.id not in self.live and await self._relay.claim(row.id):
                await self.resume(row)
                taken += 1
        if taken:
            log.info("reattaching %d session(s) no master process holds", taken)
        return taken

    def _being_started(self, row: Any, now: datetime) -> bool:
        """Rule 1: with several replicas, an INIT row younger than `START_GRACE` belongs to the
        replica creating it, which claims its lease only once the client has accepted the
        session (`EdgeSessions.create`): another replica's sweep that took it over in that
        window found a client without the session yet and ended it. An older INIT row's creator
        died mid-start, and it is free."""
        if not self._relay.shared or row.status != SessionState.INIT.value:
            return False
        created = utc(row.created_at)
        return created is not None and now - created < START_GRACE

    async def start(self) -> None:
        await self._tasks.start()  # rule 3: before any link starts
        # Named apart from the links' own "client-link-<session>" tasks.
        self._tasks.spawn(self._pings.run(), name="link-pings")
        await self._relay.start(self)
        await self.resume_all()
        if self._relay.shared:
            self._sweeper = self._tasks.spawn(self._sweep(), name="edge-session-sweep")

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_interval)
            try:
                await self.resume_all()
            except Exception as exc:  # a database or Redis outage: the next sweep tries again
                self._outage.failed(exc)
            else:
                self._outage.worked()

    # --- what other replicas did (master.edge.relay.relay.OwnerHooks) ------------------------

    async def session_ended(self, session_id: str) -> None:
        await self.let_go(session_id)

    async def ownership_lost(self, session_id: str) -> None:
        await self.let_go(session_id)

    async def let_go(self, session_id: str) -> None:
        """Another replica ended the session or holds it now: close our link, write nothing."""
        live = self.live.pop(session_id, None)
        if live is not None:
            await self._close_link(live)

    async def _close_link(self, live: RelayedSession) -> None:
        """This process stops holding the session's client link."""
        if live.unregister is not None:
            live.unregister()
            live.unregister = None
        if live.link is not None:
            await live.link.close()
        self._relay.unbind_client(live.id)

    async def node_closed(self, node_id: str) -> None:
        await self._sockets.close_local(node_id)  # the closers end this replica's sessions

    async def frames_after(self, node_id: str, session_id: str, after: str) -> Resumed | None:
        """Relay rule 4: the client's buffered frames after an edge's cursor, for a relay that
        no longer keeps them (this process restarted, or its ring moved past the cursor)."""
        path = f"/v1/session/{session_id}/frames?after={quote(after, safe='')}"
        try:
            reply = await self._calls.call(node_id, "GET", path, session_id=session_id)
        except RawpError as exc:
            log.warning("session %s: the client's replay failed: %s", session_id, exc.message)
            return None
        body = reply.body if isinstance(reply.body, dict) else {}
        frames, dropped = body.get("frames"), body.get("dropped", 0)
        if reply.status != 200 or not isinstance(frames, list) or not isinstance(dropped, int):
            log.warning("session %s: a replay answered %s", session_id, reply.status)
            return None
        texts = [text for text in frames if isinstance(text, str)]
        return Resumed(found=body.get("found") is True, frames=texts, dropped=dropped)

    async def take_over(self, session_id: str) -> bool:
        if session_id in self.live:
            return True
        async with self._db.connect() as conn:
            row = await store.live_session(conn, session_id)
        if row is None or not await self._relay.claim(session_id):
            return False
        if session_id not in self.live:
            await self.resume(row)
        return True

    # --- link state (rule 2) ---------------------------------------------------------------------

    async def _state(self, live: RelayedSession, event: SessionEvent, reason: str) -> bool:
        """The link's `on_state` (client_link rule 7): True while the session lives on."""
        if event is SessionEvent.TERMINATE:
            log.info("session %s: ending (%s)", live.id, reason)
            await self.forget(live, GOING_AWAY, f"session ended: {reason}")
            return False
        move = await self._config.move_session(live.id, event)
        if move.ended:
            log.info(
                "session %s: %s refused, the session is %s; letting it go",
                live.id,
                event.value,
                move.state.value if move.state else "gone",
            )
            await self.forget(live, GOING_AWAY, "session ended")
            return False
        log.info("session %s: %s (%s)", live.id, move.state.value if move.state else "?", reason)
        return True

    async def forget(self, live: RelayedSession, code: int, reason: str) -> None:
        """End the session here: link closed first (so it does not reattach), then TERMINATE —
        a no-op on a row already TERMINATED, so every replica may say it (rule 2)."""
        self.live.pop(live.id, None)
        await self._close_link(live)
        self._relay.forget_session(live.id, code, reason)
        await self._config.move_session(live.id, SessionEvent.TERMINATE)
        await self._relay.release(live.id)

    async def end_on_client(self, live: RelayedSession) -> None:
        try:
            reply = await self._calls.call(live.node_id, "DELETE", f"/v1/session/{live.id}")
        except RawpError as exc:
            log.warning("session %s: the client's DELETE failed: %s", live.id, exc.message)
            return
        if reply.status not in (204, 404):
            log.warning("session %s: the client answered DELETE with %s", live.id, reply.status)

    async def close(self) -> None:
        """Shutting down: links close, sessions stay for a later reattach (DETACHED) — by this
        process when it starts again, or at once by another replica.

        Within a stop's budget (issue 35: Docker and systemd kill 10 s after SIGTERM, and
        uvicorn's own graceful stop takes up to 5 of them): every link closes at once, each
        bounded by `LINK_CLOSE_SECONDS`, and the sessions move to DETACHED in one transaction,
        not one each — 10,000 sessions took more than 30 s one after the other."""
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:  # first, so that it takes no session over while links close
            sweeper.cancel()
            await asyncio.wait({sweeper})
        lives = list(self.live.values())
        closed = await asyncio.gather(
            *(self._close_link(live) for live in lives), return_exceptions=True
        )
        for live, outcome in zip(lives, closed, strict=True):
            if isinstance(outcome, Exception):  # the others close, and every session detaches
                log.error("session %s: closing its link failed", live.id, exc_info=outcome)
        try:  # RUNNING → DETACHED only: an INIT or TERMINATED row is left as it is
            await self._config.move_sessions([live.id for live in lives], SessionEvent.DETACH)
        except Exception:
            log.exception("could not mark %d sessions DETACHED at shutdown", len(lives))
        for live in lives:
            self._relay.drop_local(live.id, GOING_AWAY, "the master is shutting down")
            await self._relay.release(live.id)
        self.live.clear()
        await self._tasks.close()  # whatever is left (a link's `_forget` under way) ends here
        await self._relay.close()


def detached(row: Any) -> RelayedSession:
    return RelayedSession(
        id=row.id,
        node_id=row.node_id,
        user_id=row.user_id,
        agent_name=row.agent_name,
        limits=Limits.model_validate(row.pinned_limits),
    )
