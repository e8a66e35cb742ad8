"""Two master replicas, one run and one thread per tick (issue 30 §5): real `rawp master`
replicas on one fresh PostgreSQL database and Redis, both scanning the schedules five times a
second; a real client paired through replica A (the demo agent); the real `rawp gateway`
against the fake Discord, pointed at replica B. Schedules are made due as
tests/gateway/schedule_threads_support.py says.

Each tick is run by exactly one replica (whichever claims it, master.storage.schedules) and is
posted as exactly one thread. The gateway's store keeps its claims too
(gateway.storage.schedule_origins): two pollers on one store post a run once."""

from __future__ import annotations

import asyncio
import re

from gateway.storage.schedule_origins import ScheduleOrigins
from gateway.storage.store_db import Database as StoreDatabase
from gateway.storage.store_schema import migrate
from tests.edge.stack import EDGE_SECRET, edge_for, read_until
from tests.fakes.discord_payloads import DiscordWorld, command_option
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import content, discord_env, discord_ready, discord_start, sub
from tests.gateway.schedule_threads_support import (
    POLL,
    SCHEDULED_ID,
    YEARLY,
    listed,
    make_due,
    until,
)
from tests.gateway.store_support import drop_postgres_database, fresh_postgres_database
from tests.scale.cluster import start_replicas
from tests.scale.conftest import redis_prefix  # noqa: F401 (a fixture)
from tests.support import free_port

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"
PROMPT = "good morning from the schedule"
RAN = re.compile(r"schedule ([0-9a-f-]+): ran in session ([0-9a-f-]+)")


async def test_two_master_replicas_run_each_tick_once_into_one_thread(
    processes,
    tmp_path,
    redis_prefix,  # noqa: F811 (the fixture)
):
    _, prefix = redis_prefix
    pg_url, pg_name = await fresh_postgres_database()
    try:
        replicas = start_replicas(
            processes, tmp_path, pg_url, prefix, "--schedule-scan-seconds", "0.2", count=2
        )
        root = tmp_path / "root"
        (root / "ws").mkdir(parents=True)
        await _pair_client(processes, tmp_path, replicas.urls[0], root)
        async with FakeDiscord(WORLD) as fake:
            args = [
                "gateway", "--master-url", replicas.urls[1], "--state-dir",
                str(tmp_path / "gw"), "--workspace", str(root / "ws"),
            ]  # fmt: skip
            processes.rawp(*args, env=discord_env(fake, WORLD, **POLL))
            await discord_ready(fake)
            _, thread = await discord_start(fake)
            sent = await fake.inject_slash_command(
                "rawp",
                sub("schedule", command_option("text", f'"{YEARLY}" {PROMPT}')),
                channel_id=thread,
            )
            webhook = f"/webhooks/{WORLD.application_id}/{sent['token']}"
            said = content(await fake.wait_for_call("POST", webhook, timeout=60))
            schedule_id = SCHEDULED_ID.search(said).group(1)

            line = f"⏰ Scheduled: {PROMPT} (schedule `{schedule_id}`)"
            posts = f"/channels/{WORLD.channel_id}/messages"
            for count in (1, 2):  # two ticks, each made due once both replicas scan
                await make_due(pg_url, schedule_id)
                parent = await fake.wait_for_call(
                    "POST", posts, where=lambda c: content(c) == line, count=count, timeout=60
                )
                made = await fake.wait_for_call(
                    "POST", f"{posts}/{parent.response['id']}/threads", timeout=30
                )
                await fake.wait_for_call(
                    "POST",
                    f"/channels/{made.response['id']}/messages",
                    where=lambda c: f'You said: "{PROMPT}"' in content(c),
                    timeout=60,
                )
            ran = await listed(replicas.urls[0], OWNER, schedule_id)
            assert (ran["last_outcome"], ran["missed_runs"]) == ("ran", 0)

            def runs() -> list[str]:
                return [
                    session
                    for log in replicas.logs
                    for found, session in RAN.findall(log.read_text())
                    if found == schedule_id
                ]

            await until(lambda: ran["last_session_id"] in runs(), "the second run logged")
            assert len(runs()) == 2, runs()  # one run per tick, across both replicas
            assert len([c for c in fake.calls("POST", posts) if content(c) == line]) == 2
    finally:
        await drop_postgres_database(pg_name)


async def test_two_pollers_on_one_store_claim_a_run_once(tmp_path):
    """schedule_origins rule 2, as two gateway replicas on one database race for it."""
    db = StoreDatabase.open(tmp_path / "conversations.sqlite3")
    try:
        await migrate(db)
        origins = ScheduleOrigins(db)
        await origins.remember("s-1", "discord", "c-1", OWNER)
        seen = (await origins.on_platform("discord"))[0]  # both replicas read the same row
        won = await asyncio.gather(*(origins.claim_run(seen, "run-1") for _ in range(2)))
        assert sorted(won) == [False, True]
        missed = await asyncio.gather(*(origins.claim_missed(seen, 1) for _ in range(2)))
        assert sorted(missed) == [False, True]
        now = (await origins.on_platform("discord"))[0]
        assert (now.posted_session_id, now.reported_missed) == ("run-1", 1)
        assert await origins.claim_run(now, "run-2")  # the next run is claimed anew
        await origins.forget("s-1")
        assert await origins.on_platform("discord") == []
    finally:
        await db.dispose()


async def _pair_client(processes, tmp_path, master_url: str, root) -> None:
    """A client named test-box for the owner, paired through `master_url`, running."""
    async with edge_for(master_url, OWNER) as edge:
        status, body = await edge.call("POST", "/v1/edge/pairing-urls")
        assert status == 201, body
    port, state = free_port(), tmp_path / "c"
    pair = processes.rawp(
        "client", "pair", body["pairing_url"], "--name", "test-box", "--dev",
        "--state-dir", str(state), "--public-address", f"http://127.0.0.1:{port}",
    )  # fmt: skip
    out, _ = await asyncio.to_thread(pair.communicate, timeout=60)
    assert pair.returncode == 0, out.decode()
    client = processes.rawp(
        "client", "--dev", "--port", str(port), "--state-dir", str(state),
        "--allow-root", str(root), env={"RAWP_EDGE_SECRET": EDGE_SECRET},
    )  # fmt: skip
    await asyncio.to_thread(read_until, client, "config synced with the master", 60)
