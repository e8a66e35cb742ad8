"""Resume (issue 30 §2) through the `acp` kind: `session/load` of the ACP session id the client
kept, when the agent advertises `loadSession`; a clear error when it does not."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.agents.wire import drive, of, open_session, write_agents_file
from tests.client.harness import recv, running_client

HERE = Path(__file__).parent
TURN = {"updates": [], "response": {"stopReason": "end_turn"}}


def _agents(tmp_path: Path, load_session: bool) -> Path:
    transcript = tmp_path / f"transcript-{load_session}.json"
    transcript.write_text(json.dumps({"load_session": load_session, "turns": [TURN, TURN]}))
    command = [sys.executable, str(HERE / "fake_acp.py"), str(transcript)]
    return write_agents_file(
        tmp_path, f'[agents.fake]\nkind = "acp"\ncommand = {json.dumps(command)}\n'
    )


async def _resumed_turn(client, first: str, **where) -> tuple[str, list[dict]]:
    sid, ws = await client.start_session(agent="fake", resume=first, **where)
    await recv(ws), await recv(ws)  # capabilities, catalog
    return sid, await drive(ws, sid, "go on")


async def test_an_agent_offering_load_session_gets_the_stored_acp_session(tmp_path):
    path = _agents(tmp_path, load_session=True)
    async with running_client(tmp_path, agents_file=path) as client:
        first, ws = await open_session(client, "fake")
        await drive(ws, first, "hello")
    stored = json.loads((tmp_path / "state" / "agent-sessions.json").read_text())
    workspace = stored[first]["workspace"]
    assert stored[first] == {
        "agent_name": "fake", "agent_session_id": "fake-session-1", "workspace": workspace
    }  # fmt: skip
    async with running_client(tmp_path, agents_file=path) as client:  # after a restart
        elsewhere = client.workspace.parent / "elsewhere"
        elsewhere.mkdir()
        sid, frames = await _resumed_turn(client, first, workspace=elsewhere)
        # It ran where the conversation was, not where the request said.
        again = json.loads((tmp_path / "state" / "agent-sessions.json").read_text())
        assert again[sid]["workspace"] == workspace
    texts = [done["text"] for done in of(frames, "agent.text.done")]
    assert texts == ["[loaded: fake-session-1]"]  # the replayed history is not a new answer
    assert "agent.error" not in [f["type"] for f in frames]


async def test_an_agent_without_load_session_says_it_cannot_resume(tmp_path):
    path = _agents(tmp_path, load_session=False)
    async with running_client(tmp_path, agents_file=path) as client:
        first, ws = await open_session(client, "fake")
        await drive(ws, first, "hello")
        await ws.close()
        await client.request("DELETE", f"/v1/session/{first}")
        _, frames = await _resumed_turn(client, first)
    error = of(frames, "agent.error")[0]
    assert error["severity"] == "fatal" and "loadSession" in error["message"]
