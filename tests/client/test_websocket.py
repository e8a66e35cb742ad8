"""The data plane as the master sees it (RAWP §5.3, DPS §5–§7, §16.2–§16.3)."""

from __future__ import annotations

import re

import orjson
import pytest
from websockets.exceptions import InvalidStatus

from rawp.clock import new_id
from rawp.config import DEFAULT_LIMITS
from tests.client.harness import frame, recv, recv_until, running_client


@pytest.fixture
async def client(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWP_DEMO_PAUSE", "0")
    async with running_client(tmp_path) as running:
        yield running


async def greeted(client, **kwargs):
    sid, ws = await client.start_session(**kwargs)
    caps, catalog = await recv(ws), await recv(ws)
    assert caps["type"] == "session.capabilities"  # first on every attach (dps-profile §7)
    assert catalog["type"] == "tool.catalog.publish"
    return sid, ws


async def test_subprotocol_prefers_dps_and_accepts_legacy(client):
    made = await client.init()
    ws = await client.connect(made["session_id"], made["ticket"], ["rawp-1.0", "rawp-dps-1.0"])
    assert ws.subprotocol == "rawp-dps-1.0"
    made = await client.init()
    ws = await client.connect(made["session_id"], made["ticket"], ["rawp-1.0"])
    assert ws.subprotocol == "rawp-1.0"
    assert (await recv(ws))["type"] == "session.capabilities"


async def test_no_known_subprotocol_is_426_with_the_json_body(client):
    made = await client.init()
    with pytest.raises(InvalidStatus) as refused:
        await client.connect(made["session_id"], made["ticket"], ["graphql-ws"])
    response = refused.value.response
    assert response.status_code == 426
    assert orjson.loads(response.body)["error_code"] == "UNSUPPORTED_SUBPROTOCOL"
    # The refusal did not burn the ticket: the right subprotocol still binds.
    ws = await client.connect(made["session_id"], made["ticket"])
    assert (await recv(ws))["type"] == "session.capabilities"


async def test_bad_reused_expired_and_mismatched_tickets_are_401(client):
    made = await client.init()
    other = await client.init()
    for sid, ticket, code in (
        (made["session_id"], "wrong", "INVALID_TICKET"),
        (other["session_id"], made["ticket"], "INVALID_TICKET"),  # burns made's ticket
        (made["session_id"], made["ticket"], "INVALID_TICKET"),  # ... so it is gone now
        (made["session_id"], "", "INVALID_TICKET"),
    ):
        with pytest.raises(InvalidStatus) as refused:
            await client.connect(sid, ticket)
        assert refused.value.response.status_code == 401
        assert orjson.loads(refused.value.response.body)["error_code"] == code
    ws = await client.connect(other["session_id"], other["ticket"])
    await recv(ws)
    with pytest.raises(InvalidStatus) as reused:  # C-WS-04: burned on first use
        await client.connect(other["session_id"], other["ticket"])
    assert reused.value.response.status_code == 401
    late = await client.init()
    client.clock.advance(61)  # K-12: 60 seconds
    with pytest.raises(InvalidStatus) as expired:
        await client.connect(late["session_id"], late["ticket"])
    assert expired.value.response.status_code == 401


async def test_an_unused_ticket_ends_its_init_session(client):
    made = await client.init()
    assert (await client.request("GET", "/v1/health"))[1]["active_sessions"] == 1
    client.clock.advance(61)
    again = await client.init(session_id=made["session_id"], reattach=True)
    assert again["status"] == 404  # terminated by the sweep (session_state rule 5)
    assert (await client.request("GET", "/v1/health"))[1]["status"] == "online"


async def test_a_bad_frame_gets_session_error_and_the_socket_stays_up(client):
    sid, ws = await greeted(client)
    bad_id = new_id()
    for raw, code in (
        ("not json", "INVALID_FRAME"),
        ("[1]", "INVALID_FRAME"),
        (
            orjson.dumps(
                {
                    "v": "rawp-dps-1.0",
                    "type": "control.prompt.request",
                    "message_id": bad_id,
                    "timestamp": "2026-01-01T00:00:00Z",
                    "payload": {},
                }
            ).decode(),
            "INVALID_FRAME",
        ),
        ("x" * (DEFAULT_LIMITS.max_frame_size + 1), "FRAME_TOO_LARGE"),
    ):
        await ws.send(raw)
        reply = await recv(ws)
        assert reply["type"] == "session.error" and reply["payload"]["code"] == code
    assert "payload.prompt_text" in reply["payload"]["message"] or code == "FRAME_TOO_LARGE"
    await ws.send(frame("control.prompt.request", {"prompt_text": "still here"}, sid))
    frames = await recv_until(ws, "session.turn.end")
    assert frames[-1]["payload"]["stop_reason"] == "end_turn"


async def test_a_prompt_refused_for_its_size_is_named_and_never_runs(client):
    # Issue 28 §3: the refusal names the refused frame (parent_id and ref_message_id).
    sid, ws = await greeted(client)
    prompt_id = new_id()
    text = "x" * DEFAULT_LIMITS.max_frame_size
    await ws.send(frame("control.prompt.request", {"prompt_text": text}, sid, message_id=prompt_id))
    reply = await recv(ws)
    assert reply["type"] == "session.error" and reply["payload"]["code"] == "FRAME_TOO_LARGE"
    assert reply["parent_id"] == reply["payload"]["ref_message_id"] == prompt_id
    await ws.send(frame("control.prompt.request", {"prompt_text": "next"}, sid))
    frames = await recv_until(ws, "session.turn.start")
    assert frames[-1]["payload"]["prompt_message_id"] != prompt_id


async def test_invalid_frame_reply_names_the_field_and_the_frame(client):
    _sid, ws = await greeted(client)
    bad_id = new_id()
    await ws.send(
        orjson.dumps(
            {
                "v": "rawp-dps-1.0",
                "type": "control.prompt.request",
                "message_id": bad_id,
                "timestamp": "2026-01-01T00:00:00Z",
                "payload": {},
            }
        ).decode()
    )
    reply = await recv(ws)
    assert reply["parent_id"] == bad_id and reply["payload"]["ref_message_id"] == bad_id
    assert "payload.prompt_text" in reply["payload"]["message"]


async def test_a_demo_turn_has_every_promised_part(client):
    (client.workspace / "src").mkdir()
    (client.workspace / "src" / "auth.py").write_text("x = 1\n")
    sid, ws = await greeted(client)
    refs = [
        {"ref_id": "ref_0", "path": "src/auth.py", "display_path": "src/auth.py"},
        {"ref_id": "ref_1", "path": "missing.py", "display_path": "missing.py"},
    ]
    prompt_text = r"fix \<@file:fake> in <@file:ref_0|src/auth.py> and <@file:ref_1|missing.py>"
    request = frame(
        "control.prompt.request", {"prompt_text": prompt_text, "file_references": refs}, sid
    )
    await ws.send(request)
    frames = await recv_until(ws, "session.turn.end")
    types = [f["type"] for f in frames]
    start = frames[0]
    assert start["type"] == "session.turn.start"
    assert start["payload"]["prompt_message_id"] == orjson.loads(request)["message_id"]
    turn_id = start["payload"]["turn_id"]
    assert all(f["turn_id"] == turn_id for f in frames)
    assert "agent.thinking.delta" in types and "agent.commands.publish" in types
    diff = next(
        f
        for f in frames
        if f["type"] == "tool.invoke.result" and f["payload"]["output_type"] == "diff"
    )
    assert diff["payload"]["output"].startswith("--- a/src/auth.py\n+++ b/src/auth.py\n@@")
    tasks = next(
        f
        for f in frames
        if f["type"] == "tool.invoke.result" and f["payload"]["output_type"] == "structured"
    )
    assert [t["status"] for t in tasks["payload"]["output"]["tasks"]][:2] == ["completed"] * 2
    done = next(f for f in frames if f["type"] == "agent.text.done")["payload"]["text"]
    # Unescaped typed text, tokens as display_path, only existing files as arguments.
    assert 'You said: "fix <@file:fake> in src/auth.py and missing.py"' in done
    assert "- src/auth.py" in done and "- missing.py" not in done
    deltas = "".join(f["payload"]["text"] for f in frames if f["type"] == "agent.text.delta")
    assert deltas == done
    assert types.count("session.usage") == 1
    assert frames[-1]["payload"]["stop_reason"] == "end_turn"


async def test_long_answers_are_split_to_the_pinned_frame_size(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWP_DEMO_PAUSE", "0")
    limits = DEFAULT_LIMITS.model_copy(update={"max_frame_size": 1024})
    async with running_client(tmp_path, limits=limits) as client:
        sid, ws = await client.start_session()
        greeting = [await ws.recv(), await ws.recv()]
        assert all(len(r.encode()) <= 1024 for r in greeting)
        caps, catalog = (orjson.loads(r) for r in greeting)
        assert caps["type"] == "session.capabilities" and "file_reference" in caps["payload"]
        assert catalog["type"] == "tool.catalog.publish" and catalog["payload"]["tools"]
        await ws.send(frame("control.prompt.request", {"prompt_text": "a long answer please"}, sid))
        raw_frames = []
        while True:
            raw = await ws.recv()
            raw_frames.append(raw)
            if orjson.loads(raw)["type"] == "session.turn.end":
                break
    assert all(len(r.encode()) <= 1024 for r in raw_frames)
    frames = [orjson.loads(r) for r in raw_frames]
    text = "".join(f["payload"]["text"] for f in frames if f["type"] == "agent.text.delta")
    assert len(text) > 5000 and len(re.findall(r"^```python$", text, re.M)) >= 3
    assert text.count("```") % 2 == 0
    assert sum(f["type"] == "agent.text.delta" for f in frames) > 6


async def test_approval_round_trip(client):
    sid, ws = await greeted(client)
    await ws.send(frame("control.prompt.request", {"prompt_text": "approve this"}, sid))
    ask = (await recv_until(ws, "agent.interaction.request"))[-1]
    assert ask["payload"]["kind"] == "approval"
    option_ids = [o["option_id"] for o in ask["payload"]["options"]]
    assert option_ids == ["allow", "deny"]
    await ws.send(
        frame(
            "control.interaction.response",
            {"interaction_id": ask["payload"]["interaction_id"], "option_id": "deny"},
            sid,
            parent_id=ask["message_id"],
        )
    )
    frames = await recv_until(ws, "session.turn.end")
    done = next(f for f in frames if f["type"] == "agent.text.done")["payload"]["text"]
    assert done.startswith("You chose: deny")


async def test_slash_commands_and_input_type(client):
    sid, ws = await greeted(client)
    await ws.send(
        frame(
            "control.prompt.request",
            {"prompt_text": "/review now", "input_type": "slash_command"},
            sid,
        )
    )
    frames = await recv_until(ws, "session.turn.end")
    commands = next(f for f in frames if f["type"] == "agent.commands.publish")
    assert {"review", "explain", "compact"} <= {c["name"] for c in commands["payload"]["commands"]}
    done = next(f for f in frames if f["type"] == "agent.text.done")["payload"]["text"]
    assert done.startswith("Ran the slash command /review.")


async def test_a_second_prompt_queues_and_the_queue_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWP_DEMO_PAUSE", "0.3")
    async with running_client(tmp_path, turn_queue_max=1) as client:
        sid, ws = await greeted(client)
        first = frame("control.prompt.request", {"prompt_text": "one"}, sid)
        second = frame("control.prompt.request", {"prompt_text": "two"}, sid)
        # The refused prompt's file must not be left in the workspace (it is never used).
        notes = {"name": "notes.txt", "mime_type": "text/plain", "data": "bm90ZXM="}
        third = frame(
            "control.prompt.request", {"prompt_text": "three", "attachments": [notes]}, sid
        )
        await ws.send(first)
        start = await recv(ws)
        assert start["type"] == "session.turn.start"
        await ws.send(second)  # queued behind turn one
        await ws.send(third)  # past the bound
        frames = await recv_until(ws, "session.turn.end")
        full = [f for f in frames if f["type"] == "session.error"]
        assert full and full[0]["payload"]["code"] == "TURN_QUEUE_FULL"
        assert full[0]["payload"]["ref_message_id"] == orjson.loads(third)["message_id"]
        assert not list(client.workspace.rglob("notes*.txt"))
        turn_one = [f for f in frames if f.get("turn_id") == start["payload"]["turn_id"]]
        assert turn_one[-1]["type"] == "session.turn.end"
        frames = await recv_until(ws, "session.turn.end")  # never interleaved: turn two after
        assert frames[0]["type"] == "session.turn.start"
        assert frames[0]["payload"]["prompt_message_id"] == orjson.loads(second)["message_id"]
        done = next(f for f in frames if f["type"] == "agent.text.done")["payload"]["text"]
        assert '"two"' in done


async def test_cancel_ends_the_turn_as_cancelled(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWP_DEMO_PAUSE", "5")
    async with running_client(tmp_path) as client:
        sid, ws = await greeted(client)
        await ws.send(frame("control.prompt.request", {"prompt_text": "slow"}, sid))
        start = await recv(ws)
        await ws.send(frame("control.prompt.cancel", {"turn_id": new_id()}, sid))
        wrong = await recv_until(ws, "session.error")
        assert wrong[-1]["payload"]["code"] == "NO_SUCH_TURN"
        await ws.send(frame("control.prompt.cancel", {"turn_id": start["turn_id"]}, sid))
        frames = await recv_until(ws, "session.turn.end", wait=10)
        assert frames[-1]["payload"] == {**frames[-1]["payload"], "stop_reason": "cancelled"}
        assert "agent.text.done" not in [f["type"] for f in frames]


async def test_tools_not_published_as_direct_are_refused(client):
    sid, ws = await greeted(client)
    for tool in ("Bash", "Edit"):  # unknown, and published but not direct
        request = frame(
            "tool.invoke.request",
            {"invocation_id": f"x-{tool}", "tool_name": tool, "input": {"command": "rm -rf /"}},
            sid,
        )
        await ws.send(request)
        reply = await recv(ws)
        assert reply["type"] == "tool.invoke.result"
        assert reply["parent_id"] == orjson.loads(request)["message_id"]
        assert reply["payload"]["status"] == "error"
        assert reply["payload"]["error"]["code"] == "TOOL_NOT_PUBLISHED"


async def test_capabilities_and_catalog_content(client):
    _sid, ws = await client.start_session()
    caps, catalog = await recv(ws), await recv(ws)
    assert caps["payload"]["file_reference"]["max_results"] == 50
    assert "control.file.search" in caps["payload"]["events"]
    assert caps["payload"]["tools_direct"] is False
    names = {t["name"]: t for t in catalog["payload"]["tools"]}
    assert set(names) == {"Edit", "Read"} and not any(t["direct"] for t in names.values())


async def test_unsupported_controls_and_foreign_session_frames(client):
    sid, ws = await greeted(client)
    await ws.send(frame("control.mode.set", {"mode": "plan"}, sid))
    refused = (await recv(ws))["payload"]
    assert refused["code"] == "UNSUPPORTED_CONTROL"
    assert "has no modes to choose from" in refused["message"]
    await ws.send(frame("control.prompt.request", {"prompt_text": "x"}, new_id()))
    assert (await recv(ws))["payload"]["code"] == "SESSION_MISMATCH"


async def test_an_unmapped_token_reaches_the_agent_as_written(client):
    sid, ws = await greeted(client)
    await ws.send(
        frame("control.prompt.request", {"prompt_text": "look at <@file:ref_9|x.py>"}, sid)
    )
    frames = await recv_until(ws, "session.turn.end")
    done = next(f for f in frames if f["type"] == "agent.text.done")["payload"]["text"]
    assert 'You said: "look at <@file:ref_9|x.py>"' in done  # F-TOK-05/06: literal, kept
    assert "No files were referenced." in done
