"""Terminal sessions (issue 30 §2, client/sessions/terminal.py): the real `claude` CLI, run
outside RAWP against the fake Anthropic API with the HOME the client gives its claude agent,
writes a transcript; the client lists it (and nothing outside its allowed roots, nothing RAWP
started) and a session picks it up with the conversation remembered."""

from __future__ import annotations

import json

from tests.agents.conftest import model_env
from tests.agents.fake_anthropic import FakeAnthropic, Turn, text
from tests.agents.terminal_support import claude_in_terminal
from tests.agents.wire import drive, inline_table, of, open_session, write_agents_file
from tests.client.harness import recv, running_client


async def listing(client, agent: str | None = "claude") -> tuple[int, dict]:
    query = f"?agent={agent}" if agent else ""
    return await client.request("GET", f"/v1/agent-sessions{query}")


async def test_a_terminal_conversation_is_listed_and_picked_up(tmp_path, node_agents):
    async with FakeAnthropic() as fake:
        env = model_env(fake.base_url, tmp_path / "home")
        path = write_agents_file(
            tmp_path,
            '[agents.claude]\nkind = "claude-code"\n'
            f"command = [{json.dumps(str(node_agents.claude))}]\nenv = {inline_table(env)}\n",
        )
        inside = tmp_path / "root" / "ws" / "app.v2"
        inside.mkdir(parents=True)
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        fake.script.append(Turn([text("noted: kestrel")]))
        mine = await claude_in_terminal(
            node_agents.claude, env, inside, "remember the word kestrel\nplease"
        )
        fake.script.append(Turn([text("noted: secret")]))
        await claude_in_terminal(node_agents.claude, env, outside, "the outside secret")
        async with running_client(tmp_path, agents_file=path) as client:
            fake.script.append(Turn([text("rawp's own")]))
            ours, ws = await open_session(client, "claude")
            await drive(ws, ours, "a rawp session")
            status, body = await listing(client)
            assert status == 200, body
            # Only the one inside the allowed roots that RAWP did not start.
            assert [c["conversation_id"] for c in body["conversations"]] == [mine]
            found = body["conversations"][0]
            assert found["title"] == "remember the word kestrel please"
            assert found["workspace_path"] == str(inside)
            assert found["agent_name"] == "claude" and found["updated_at"]
            assert (await listing(client, None))[1] == body
            assert (await listing(client, "nobody"))[0] == 403

            refused = await client.init(agent="claude", resume_conversation="no-such-id")
            assert refused["status"] == 404, refused
            assert refused["body"]["error_code"] == "RESUME_NOT_FOUND"
            bad = await client.init(agent="claude", resume_conversation="../../etc")
            assert bad["status"] == 400

            fresh = len(fake.main_requests())
            fake.script.append(Turn([text("it was kestrel")]))
            sid, picked = await client.start_session(agent="claude", resume_conversation=mine)
            await recv(picked), await recv(picked)  # capabilities, catalog
            frames = await drive(picked, sid, "which word was it?")
            assert of(frames, "agent.text.done")[-1]["text"] == "it was kestrel"
            sent = json.dumps(fake.main_requests()[fresh:][-1]["messages"])
            assert "remember the word kestrel" in sent and "noted: kestrel" in sent
            # Picked up, it is RAWP's now: resumed in its thread, no longer listed.
            assert (await listing(client))[1]["conversations"] == []
