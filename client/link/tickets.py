"""WebSocket tickets (RAWP §5.1, §5.3, K-12): master-generated, 60 s, burned on first use.

Only SHA-256 fingerprints are kept, so a ticket never sits in memory or a log in clear.
"""

from __future__ import annotations

from dataclasses import dataclass

from rawp.clock import Clock
from rawp.errors import Unauthorized
from rawp.tokens import fingerprint


@dataclass(slots=True)
class _Ticket:
    session_id: str
    expires_at: float  # clock.monotonic()


class TicketStore:
    def __init__(self, clock: Clock, ttl: float) -> None:
        self.clock = clock
        self.ttl = ttl
        self._tickets: dict[str, _Ticket] = {}

    def register(self, ticket: str, session_id: str) -> None:
        self.sweep()
        # One live ticket per session: a new init supersedes an unused one.
        for key in [k for k, t in self._tickets.items() if t.session_id == session_id]:
            del self._tickets[key]
        self._tickets[fingerprint(ticket)] = _Ticket(session_id, self.clock.monotonic() + self.ttl)

    def burn(self, ticket: str | None, session_id: str | None) -> str:
        """Consume a ticket for `session_id` (C-WS-03/04); `Unauthorized` if it does not fit."""
        if not ticket or not session_id:
            raise Unauthorized("ticket and session_id are required", "INVALID_TICKET")
        entry = self._tickets.pop(fingerprint(ticket), None)
        if entry is None:
            raise Unauthorized("the ticket is unknown or already used", "INVALID_TICKET")
        if entry.expires_at <= self.clock.monotonic():
            raise Unauthorized("the ticket has expired", "TICKET_EXPIRED")
        if entry.session_id != session_id:
            raise Unauthorized("the ticket belongs to another session", "INVALID_TICKET")
        return session_id

    def pending_for(self, session_id: str) -> bool:
        now = self.clock.monotonic()
        return any(
            t.session_id == session_id and t.expires_at > now for t in self._tickets.values()
        )

    def sweep(self) -> None:
        now = self.clock.monotonic()
        for key in [k for k, t in self._tickets.items() if t.expires_at <= now]:
            del self._tickets[key]
