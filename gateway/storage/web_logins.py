"""The web edge's one-time login links and the usage per day it remembers (issue 21).

Rules:

1. A login token is 32 random bytes (URL-safe base64), bound to one chat subject (`slack:T1:U2`,
   `discord:123`, `console:local`) and valid `LOGIN_TTL_S` (10 minutes).
2. Only its SHA-256 is stored: a copy of the database does not sign anyone in.
3. Redeeming deletes the row in the same statement that reads it (`DELETE … RETURNING`), so of
   two redemptions of one token — in one process or in two gateway replicas sharing the
   database (docs/scale-out.md) — exactly one gets the subject. An expired row is deleted and
   refused alike; expired rows are swept whenever a token is issued.
4. The master keeps usage for today, this week and this month, not per day. Each time the web
   edge reads today's figures it records them per (subject, node, UTC day), so the chart's
   earlier days are the last figures this gateway saw on those days (a day nobody looked at
   the chart is missing, and a day's figure may stop short of its final total).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite

from gateway.storage.store_db import Database
from gateway.storage.store_schema import web_logins, web_usage_days

LOGIN_TTL_S = 600.0  # rule 1: ten minutes
WEB_OFF = "The web edge is not running on this gateway (add web to RAWP_PLATFORM; docs/web.md)."
# subject → a fresh one-time login link (adapters.web builds it; ConversationService.web_links)
WebLinks = Callable[[str], Awaitable[str]]
ENGINES = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


@dataclass(frozen=True)
class LoginGrant:
    subject: str
    name: str


@dataclass(frozen=True)
class DayUsage:
    day: str
    node_id: str
    node_name: str
    input_tokens: int
    output_tokens: int
    cost_usd: float


async def web_link_text(links: WebLinks | None, subject: str) -> str:
    """`/rawp web`'s answer, shown to the caller only (the link signs in as them)."""
    if links is None:
        return WEB_OFF
    link = await links(subject)
    minutes = int(LOGIN_TTL_S // 60)
    return f"Your web sign-in link (works once, for {minutes} minutes; do not share it): {link}"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()  # rule 2


class WebLogins:
    def __init__(self, db: Database, *, ttl_s: float = LOGIN_TTL_S, now=time.time) -> None:
        self._db = db
        self._ttl = ttl_s
        self._now = now
        self._insert = ENGINES[db.dialect]

    async def issue(self, subject: str, name: str | None = None) -> str:
        """A fresh one-time token for `subject` (rule 1); the caller builds the link."""
        token = secrets.token_urlsafe(32)
        now = self._now()
        async with self._db.write() as conn:
            await conn.execute(delete(web_logins).where(web_logins.c.expires_at <= now))
            await conn.execute(
                web_logins.insert().values(
                    token_hash=token_hash(token),
                    subject=subject,
                    name=name or subject.rpartition(":")[2] or subject,
                    expires_at=now + self._ttl,
                )
            )
        return token

    async def redeem(self, token: str) -> LoginGrant | None:
        """The grant of a valid token, used up now; None for a used, expired or forged one."""
        if not token or len(token) > 200:
            return None
        statement = (
            delete(web_logins)
            .where(web_logins.c.token_hash == token_hash(token))
            .returning(web_logins.c.subject, web_logins.c.name, web_logins.c.expires_at)
        )
        async with self._db.write() as conn:  # rule 3: read and spent in one statement
            row = (await conn.execute(statement)).first()
        if row is None or row.expires_at <= self._now():
            return None
        return LoginGrant(row.subject, row.name)

    # --- usage per day (rule 4) ----------------------------------------------------------------

    async def record_usage(self, subject: str, days: list[DayUsage]) -> None:
        if not days:
            return
        async with self._db.write() as conn:
            for usage in days:
                row = {"subject": subject, **usage.__dict__}
                statement = self._insert(web_usage_days).values(**row)
                statement = statement.on_conflict_do_update(
                    index_elements=["subject", "node_id", "day"],
                    set_={
                        name: statement.excluded[name]
                        for name in ("node_name", "input_tokens", "output_tokens", "cost_usd")
                    },
                )
                await conn.execute(statement)

    async def usage_since(self, subject: str, first_day: str) -> list[DayUsage]:
        query = (
            select(web_usage_days)
            .where(web_usage_days.c.subject == subject, web_usage_days.c.day >= first_day)
            .order_by(web_usage_days.c.day, web_usage_days.c.node_id)
        )
        async with self._db.read() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [
            DayUsage(
                r["day"],
                r["node_id"],
                r["node_name"],
                r["input_tokens"],
                r["output_tokens"],
                r["cost_usd"],
            )
            for r in rows
        ]
