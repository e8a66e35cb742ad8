"""Scheduled prompts' Edge API routes (issue 30 §5, master/edge/sessions/schedules.py) under
Quart's test client on SQLite and PostgreSQL: made from cron or a phrase, bad input refused
clearly, each user sees and changes only their own, and a due tick starts a session on the
node and hands it the prompt (master/edge/sessions/schedule_runs.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from rawp.clock import FakeClock

ALICE, BOB = "discord:111", "slack:T9:U222"


def _body(node_id: str, **extra) -> dict:
    body = {
        "node_id": node_id,
        "agent_name": "demo",
        "workspace_path": "/work/space",
        "prompt": "summarise yesterday's commits",
        "schedule": "every weekday 9:00",
    }
    body.update(extra)
    return body


async def test_schedules_are_made_listed_paused_and_deleted_by_their_owner_only(
    make_edge_master, fake_client
):
    clock = FakeClock(datetime.now(UTC))
    async with make_edge_master(clock=clock) as master:
        node = (await master.node(ALICE, fake_client.address))["node_id"]
        status, made = await master.call(ALICE, "POST", "/v1/edge/schedules", _body(node))
        assert status == 201, made
        assert (made["schedule"], made["timezone"], made["paused"]) == ("0 9 * * 1-5", "UTC", False)
        assert made["next_run_at"] and made["missed_runs"] == 0 and made["last_run_at"] is None
        clock.advance(1)  # listed oldest first
        status, cron = await master.call(
            ALICE,
            "POST",
            "/v1/edge/schedules",
            _body(node, schedule="*/15 * * * *", timezone="Europe/Berlin"),
        )
        assert (status, cron["schedule"], cron["timezone"]) == (
            201,
            "*/15 * * * *",
            "Europe/Berlin",
        )

        for bad, code in (
            ({"schedule": "every fortnight 9:00"}, "INVALID_SCHEDULE"),
            ({"schedule": "every day 25:00"}, "INVALID_SCHEDULE"),
            ({"schedule": "0 9 * *"}, "INVALID_SCHEDULE"),
            ({"timezone": "Mars/Olympus"}, "INVALID_TIMEZONE"),
            ({"prompt": ""}, "INVALID_REQUEST"),
        ):
            status, refused = await master.call(
                ALICE, "POST", "/v1/edge/schedules", _body(node, **bad)
            )
            assert (status, refused["error_code"]) == (400, code), (bad, refused)
            assert refused["message"]
        status, refused = await master.call(BOB, "POST", "/v1/edge/schedules", _body(node))
        assert (status, refused["error_code"]) == (404, "NODE_NOT_FOUND")

        status, listed = await master.call(ALICE, "GET", "/v1/edge/schedules")
        assert [s["schedule_id"] for s in listed["schedules"]] == [
            made["schedule_id"],
            cron["schedule_id"],
        ]
        status, others = await master.call(BOB, "GET", "/v1/edge/schedules")
        assert (status, others) == (200, {"schedules": []})

        path = f"/v1/edge/schedules/{made['schedule_id']}"
        for method, suffix in (("POST", "/pause"), ("POST", "/resume"), ("DELETE", "")):
            status, refused = await master.call(BOB, method, path + suffix)
            assert (status, refused["error_code"]) == (404, "SCHEDULE_NOT_FOUND")
        status, paused = await master.call(ALICE, "POST", path + "/pause")
        assert (status, paused["paused"], paused["next_run_at"]) == (200, True, None)
        status, resumed = await master.call(ALICE, "POST", path + "/resume")
        assert (status, resumed["paused"]) == (200, False) and resumed["next_run_at"]
        status, _ = await master.call(ALICE, "DELETE", path)
        assert status == 204
        status, listed = await master.call(ALICE, "GET", "/v1/edge/schedules")
        assert [s["schedule_id"] for s in listed["schedules"]] == [cron["schedule_id"]]
        status, gone = await master.call(ALICE, "POST", path + "/pause")
        assert (status, gone["error_code"]) == (404, "SCHEDULE_NOT_FOUND")


async def test_a_due_tick_starts_a_session_and_sends_the_prompt(make_edge_master, fake_client):
    # Ten seconds into a minute, whatever the wall clock says: which minute ticks fall within
    # each advance below must not depend on when the test runs.
    clock = FakeClock(datetime.now(UTC).replace(second=10, microsecond=0))
    async with make_edge_master(clock=clock) as master:
        node = (await master.node(ALICE, fake_client.address))["node_id"]
        body = _body(node, schedule="* * * * *")  # every minute
        status, made = await master.call(ALICE, "POST", "/v1/edge/schedules", body)
        assert status == 201, made
        scheduler = master.services.edge.scheduler
        assert scheduler.running  # the serving master scans on its own (scheduler rule 1)
        assert await scheduler.scan() == 0  # not a minute yet
        clock.advance(61)
        assert await scheduler.scan() == 1
        status, listed = await master.call(ALICE, "GET", "/v1/edge/schedules")
        ran = listed["schedules"][0]
        assert ran["last_outcome"] == "ran" and ran["last_run_at"], ran
        session_id = ran["last_session_id"]
        frames = [json.loads(f) for f in await fake_client.wait_received(session_id, 1)]
        prompt = [f for f in frames if f["type"] == "control.prompt.request"]
        assert prompt[0]["payload"]["prompt_text"] == "summarise yesterday's commits"
        status, sessions = await master.call(ALICE, "GET", "/v1/edge/sessions")
        assert session_id in [s["session_id"] for s in sessions["sessions"]]

        clock.advance(3 * 60 + 1)  # three ticks fell: one catch-up, two reported missed
        assert await scheduler.scan() == 1
        assert await scheduler.scan() == 0
        status, listed = await master.call(ALICE, "GET", "/v1/edge/schedules")
        assert listed["schedules"][0]["missed_runs"] == 2
        clock.advance(timedelta(minutes=1).total_seconds())
        await master.call(ALICE, "POST", f"/v1/edge/schedules/{made['schedule_id']}/pause")
        assert await scheduler.scan() == 0
