"""The web edge's one-time login links (gateway.storage.web_logins) on a real SQLite store, and its
signed cookie (adapters.web.auth): single use across two store handles (two replicas), the
10-minute expiry, only a hash at rest, a cookie that expires or is altered is refused."""

from __future__ import annotations

import asyncio
import sqlite3

from adapters.web.auth import CookieSigner, WebUser
from gateway.storage.conversation_store import ConversationStore
from gateway.storage.web_logins import LOGIN_TTL_S, WebLogins, token_hash


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_a_token_signs_in_once_even_when_two_replicas_race(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    one, two = await ConversationStore.open(path), await ConversationStore.open(path)
    try:
        first, second = WebLogins(one.database), WebLogins(two.database)
        token = await first.issue("slack:T1:U2")
        grants = await asyncio.gather(*(w.redeem(token) for w in (first, second, first, second)))
        won = [g for g in grants if g is not None]
        assert len(won) == 1 and won[0].subject == "slack:T1:U2" and won[0].name == "U2"
        assert await second.redeem(token) is None
    finally:
        await one.close()
        await two.close()


async def test_tokens_expire_after_ten_minutes_and_only_their_hash_is_stored(tmp_path):
    path = tmp_path / "conversations.sqlite3"
    store = await ConversationStore.open(path)
    clock = Clock()
    try:
        logins = WebLogins(store.database, now=clock)
        late = await logins.issue("discord:42", "ada")
        in_time = await logins.issue("discord:42", "ada")
        with sqlite3.connect(path) as db:
            stored = {row[0] for row in db.execute("SELECT token_hash FROM web_logins")}
        assert stored == {token_hash(late), token_hash(in_time)}
        assert LOGIN_TTL_S == 600
        clock.now += LOGIN_TTL_S - 1
        assert (await logins.redeem(in_time)).name == "ada"
        clock.now += 1
        assert await logins.redeem(late) is None  # expired at exactly 10 minutes
        assert await logins.redeem("forged-" + late) is None
        assert await logins.redeem("") is None
    finally:
        await store.close()


def test_a_cookie_is_refused_when_expired_altered_or_signed_with_another_secret():
    clock = Clock()
    signer = CookieSigner("edge-secret", ttl_s=12 * 3600, now=clock)
    value = signer.make(WebUser("console:local", "local"))
    assert "edge-secret" not in value
    assert signer.read(value) == WebUser("console:local", "local")
    assert CookieSigner("edge-secret", now=clock).read(value) is not None  # another replica
    assert CookieSigner("other-secret", now=clock).read(value) is None
    payload, signature = value.split(".")
    assert signer.read(f"{payload}x.{signature}") is None
    assert signer.read(f"{payload}.{signature[::-1]}") is None
    assert signer.read(None) is None and signer.read("no-dot") is None
    clock.now += 12 * 3600
    assert signer.read(value) is None
