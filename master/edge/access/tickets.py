"""`edge_ws_ticket` (RAWP §9.3.1, §9.4, A-22): random, single use, short-lived, user-bound.

A ticket is 43 random characters stored only as its SHA-256 fingerprint. It opens one edge
WebSocket to one session for the user it was issued to, within `ticket_ttl` seconds; the first
use burns it (an UPDATE that only one caller can win, on any replica).

Tickets expired for an hour are deleted when a ticket is issued, at most once a minute: the
sweep reads the whole table (times are compared in Python, storage.schema), and done on every
issue it made opening N sessions cost O(N²) — 10,000 sessions slowed to a few a second
(issue 20 §3).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from master.storage import edge_sessions as store
from master.storage.db import Database, utc
from rawp.clock import Clock, new_secret
from rawp.errors import Unauthorized
from rawp.tokens import fingerprint


@dataclass(frozen=True)
class Admission:
    session_id: str
    user_id: str


SWEEP_EVERY = 60.0  # seconds between sweeps of expired tickets


class EdgeTickets:
    def __init__(self, db: Database, clock: Clock, ttl_seconds: int) -> None:
        self._db = db
        self._clock = clock
        self.ttl = ttl_seconds
        self._swept_at: float | None = None  # monotonic time of the last sweep

    async def issue(self, session_id: str, user_id: str) -> str:
        now = self._clock.now()
        ticket = new_secret()
        sweep = self._swept_at is None or self._clock.monotonic() - self._swept_at >= SWEEP_EVERY
        async with self._db.begin() as conn:
            if sweep:
                await store.delete_old_tickets(conn, now - timedelta(hours=1))
                self._swept_at = self._clock.monotonic()
            await store.insert_ticket(
                conn,
                fingerprint=fingerprint(ticket),
                session_id=session_id,
                user_id=user_id,
                now=now,
                expires_at=now + timedelta(seconds=self.ttl),
            )
        return ticket

    async def burn(self, ticket: str | None, session_id: str | None) -> Admission:
        """The session and user a WebSocket upgrade may attach as, or 401 (ticket spent)."""
        if not ticket or not session_id:
            raise Unauthorized("ticket and session_id are required", "INVALID_TICKET")
        now = self._clock.now()
        fp = fingerprint(ticket)
        async with self._db.begin() as conn:
            row = await store.ticket(conn, fp)
            if row is None or row.used_at is not None:
                raise Unauthorized("the ticket is unknown or already used", "INVALID_TICKET")
            if utc(row.expires_at) <= now:
                raise Unauthorized("the ticket has expired; ask for a new one", "TICKET_EXPIRED")
            if row.session_id != session_id:
                raise Unauthorized("the ticket belongs to another session", "INVALID_TICKET")
            if not await store.burn_ticket(conn, fp, now):
                raise Unauthorized("the ticket is unknown or already used", "INVALID_TICKET")
        return Admission(row.session_id, row.user_id)
