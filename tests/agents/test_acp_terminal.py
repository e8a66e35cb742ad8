"""Terminal sessions of an ACP agent (issue 30 §2, client/sessions/acp_listing.py): an agent
that advertises `sessionCapabilities.list` is asked `session/list` (every page); the client
lists only the sessions inside its allowed roots that RAWP did not start, and picks one up
with `session/load` where it ran. An agent that does not advertise it lists nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.agents.wire import drive, of, write_agents_file
from tests.client.harness import recv, running_client

HERE = Path(__file__).parent
TURN = {"updates": [], "response": {"stopReason": "end_turn"}}


def _agents(tmp_path: Path, sessions: list[dict]) -> Path:
    listing = tmp_path / "listing.json"
    listing.write_text(
        json.dumps({"load_session": True, "list_sessions": sessions, "turns": [TURN] * 3})
    )
    silent = tmp_path / "silent.json"
    silent.write_text(json.dumps({"load_session": True, "turns": [TURN]}))
    fake = [sys.executable, str(HERE / "fake_acp.py")]
    return write_agents_file(
        tmp_path,
        f'[agents.lister]\nkind = "acp"\ncommand = {json.dumps([*fake, str(listing)])}\n'
        f'[agents.silent]\nkind = "acp"\ncommand = {json.dumps([*fake, str(silent)])}\n',
    )


async def test_an_acp_agents_own_sessions_are_listed_and_one_is_picked_up(tmp_path):
    inside = tmp_path / "root" / "ws" / "api"
    inside.mkdir(parents=True)
    sessions = [
        {
            "sessionId": "acp-term-1",
            "cwd": str(inside),
            "title": "fix the\nlogin",
            "updatedAt": "2026-01-02T00:00:00Z",
        },
        {"sessionId": "acp-outside", "cwd": str(tmp_path), "title": "secret"},
        {"sessionId": "fake-session-1", "cwd": str(inside), "title": "rawp's own"},
    ]
    path = _agents(tmp_path, sessions)
    async with running_client(tmp_path, agents_file=path) as client:
        sid, ws = await client.start_session(agent="lister")  # RAWP's: fake-session-1
        await recv(ws), await recv(ws)
        await drive(ws, sid, "hello")
        status, body = await client.request("GET", "/v1/agent-sessions")
        assert status == 200, body
        listed = body["conversations"]
        assert [(c["agent_name"], c["conversation_id"]) for c in listed] == [
            ("lister", "acp-term-1")
        ]
        assert listed[0]["title"] == "fix the login"
        assert listed[0]["workspace_path"] == str(inside)
        status, body = await client.request("GET", "/v1/agent-sessions?agent=silent")
        assert (status, body["conversations"]) == (200, [])

        outside = await client.init(agent="lister", resume_conversation="acp-outside")
        assert outside["status"] == 404, outside
        picked, ws = await client.start_session(agent="lister", resume_conversation="acp-term-1")
        await recv(ws), await recv(ws)
        frames = await drive(ws, picked, "go on")
        assert [d["text"] for d in of(frames, "agent.text.done")] == ["[loaded: acp-term-1]"]
        stored = json.loads((tmp_path / "state" / "agent-sessions.json").read_text())
        assert stored[picked]["workspace"] == str(inside)  # it ran where the session was
