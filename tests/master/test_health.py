"""`GET /v1/health`: online while the database answers, 503 with the §7.1 body when not."""

from __future__ import annotations

from master.storage.db import Database


async def test_health_is_online_without_a_token(master):
    response = await master.client.get("/v1/health")
    assert response.status_code == 200
    body = await response.get_json()
    assert body["status"] == "online" and body["uptime"] >= 0


async def test_health_is_503_when_the_database_is_gone(master, tmp_path):
    services = master.services
    working = services.db
    services.db = Database(f"sqlite+aiosqlite:///{tmp_path}/missing/dir/rawp.db")
    try:
        response = await master.client.get("/v1/health")
    finally:
        await services.db.dispose()
        services.db = working
    assert response.status_code == 503
    body = await response.get_json()
    assert body["error_code"] == "DATABASE_UNAVAILABLE" and "database" in body["message"]
