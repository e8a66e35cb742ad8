"""Fault-suite fixtures: PostgreSQL and Redis for the replica scenarios come from the scale
suite (skipped, with the reason printed, only where the service does not answer)."""

from __future__ import annotations

from tests.scale import conftest as scale

pg_url = scale.pg_url
postgres_url = scale.postgres_url
redis_prefix = scale.redis_prefix
