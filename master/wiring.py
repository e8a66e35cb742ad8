"""Building the master's services from its settings, once per process (or per test app)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from master.client_calls import ClientCaller
from master.edge.relay.notify import NotifyingConfigScopes
from master.edge.relay.relay import InProcessRelay, Relay
from master.edge.wiring import EdgeServices, build_edge
from master.metrics import MasterMetrics
from master.services.addresses import AddressPolicy
from master.services.config_scopes import ConfigScopes
from master.services.keys import load_or_create_signing_key
from master.services.pairing import PairingService
from master.services.session_start import SessionStarter
from master.services.sockets import NodeSockets
from master.services.tokens import TokenService
from master.settings import MasterSettings
from master.storage.db import Database
from master.storage.migrations import migrate
from rawp.clock import Clock
from rawp.tokens import SigningKey
from runtime.database import redacted
from runtime.rate_limit import MemoryRateLimiter, RateLimiter
from runtime.settings import plain

log = logging.getLogger("rawp.master")


@dataclass
class Services:
    settings: MasterSettings
    clock: Clock
    db: Database
    key: SigningKey
    limiter: RateLimiter
    tokens: TokenService
    pairing: PairingService
    config: ConfigScopes
    sockets: NodeSockets
    client_calls: ClientCaller
    sessions: SessionStarter
    # §3.2 for pairing and every call; its `resolve` is the seam tests answer names through.
    addresses: AddressPolicy
    edge: EdgeServices | None = None  # the Edge API (master/edge)
    metrics: MasterMetrics | None = None  # GET /metrics (master.api.metrics)

    async def close(self) -> None:
        if self.edge is not None:
            await self.edge.close()
        await self.client_calls.close()
        await self.db.dispose()
        close_limiter = getattr(self.limiter, "aclose", None)
        if close_limiter is not None:  # the Redis limiter's connections (docs/scale-out.md)
            await close_limiter()


async def build_services(
    settings: MasterSettings,
    clock: Clock,
    limiter: RateLimiter | None = None,
    metrics: MasterMetrics | None = None,
) -> Services:
    metrics = metrics or MasterMetrics()
    db = await _database(settings)
    key = load_or_create_signing_key(settings.state_dir)
    tokens = _tokens(settings, db, key, clock)
    sockets = NodeSockets()
    relay = _relay(settings)
    sockets.tell_others = relay.node_closed  # §3.5 on every replica (docs/scale-out.md)
    # Config updates also push node.config.changed to the node's edge sockets (§9.4.4).
    config: ConfigScopes = NotifyingConfigScopes(db, clock, relay)
    addresses = AddressPolicy(dev=settings.dev)
    pairing = PairingService(
        db,
        tokens,
        sockets,
        clock,
        base_url=settings.base_url,
        ttl_seconds=settings.pairing_token_ttl,
        addresses=addresses,
    )
    client_calls = ClientCaller(
        db, config, clock, addresses=addresses, unsynced_rate=settings.unsynced_client_rate
    )
    starter = SessionStarter(config, client_calls)
    edge = build_edge(
        settings=settings.edge,
        clock=clock,
        db=db,
        key=key,
        relay=relay,
        config=config,
        calls=client_calls,
        starter=starter,
        sockets=sockets,
        metrics=metrics,
    )
    metrics.live_sessions = lambda: edge.sessions.live.values()
    return Services(
        settings=settings,
        clock=clock,
        db=db,
        key=key,
        limiter=limiter or _limiter(settings, clock),
        tokens=tokens,
        pairing=pairing,
        config=config,
        sockets=sockets,
        client_calls=client_calls,
        sessions=starter,
        addresses=addresses,
        edge=edge,
        metrics=metrics,
    )


async def _database(settings: MasterSettings) -> Database:
    """The master's database, migrated, under its state directory (created private)."""
    settings.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    db = Database(settings.database_address)
    await migrate(db)
    log.info("database: %s", redacted(db.url))
    return db


def _tokens(settings: MasterSettings, db: Database, key: SigningKey, clock: Clock) -> TokenService:
    """Node access and refresh tokens (§3.3), signed with the master's key."""
    return TokenService(
        db,
        key,
        clock,
        access_ttl=settings.access_token_ttl,
        refresh_ttl=settings.refresh_token_ttl,
    )


def _limiter(settings: MasterSettings, clock: Clock) -> RateLimiter:
    """In-process buckets, or buckets shared by every replica when a Redis URL is set."""
    if not settings.redis_url:
        return MemoryRateLimiter(clock)
    from runtime.redis_buckets import RedisRateLimiter  # imports redis: only here

    log.info("rate limits: shared through Redis")
    return RedisRateLimiter.from_url(
        plain(settings.redis_url), prefix=f"{settings.redis_prefix}rate:"
    )


def _relay(settings: MasterSettings) -> Relay:
    """Sockets in this process only, or sessions shared by every replica (docs/scale-out.md)."""
    edge = settings.edge
    if not settings.redis_url:
        return InProcessRelay(
            edge.replay_frames, edge.dedupe_window, edge.replay_bytes, edge.replay_total_bytes
        )
    from master.edge.replicas.redis_relay import RedisRelay  # imports redis: only here

    return RedisRelay(
        plain(settings.redis_url),
        prefix=settings.redis_prefix,
        replay_frames=edge.replay_frames,
        dedupe_window=edge.dedupe_window,
        lease_seconds=edge.lease_seconds,
        # The holder's own link waits `delivery_seconds` for a reattach; its answer needs a
        # moment more to come back through Redis.
        deliver_seconds=edge.delivery_seconds + 1.0,
    )
