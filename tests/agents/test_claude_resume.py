"""Resume (issue 30 §2) with the real `claude` CLI against the fake Anthropic API: a new
session, after the client restarted, continues an earlier session's conversation because the
client kept Claude Code's own session id and started the CLI with `--resume <that id>`."""

from __future__ import annotations

import json

from tests.agents.conftest import model_env
from tests.agents.fake_anthropic import FakeAnthropic, Turn, text
from tests.agents.wire import drive, inline_table, of, open_session, write_agents_file
from tests.client.harness import recv, running_client


def _records(tmp_path) -> dict:
    return json.loads((tmp_path / "state" / "agent-sessions.json").read_text())


async def test_a_new_session_resumes_the_earlier_conversation_after_a_client_restart(
    tmp_path, node_agents
):
    async with FakeAnthropic() as fake:
        env = model_env(fake.base_url, tmp_path / "home")
        path = write_agents_file(
            tmp_path,
            '[agents.claude]\nkind = "claude-code"\n'
            f"command = [{json.dumps(str(node_agents.claude))}]\nenv = {inline_table(env)}\n"
            '[agents.other]\nkind = "claude-code"\n'
            f"command = [{json.dumps(str(node_agents.claude))}]\nenv = {inline_table(env)}\n",
        )
        async with running_client(tmp_path, agents_file=path) as client:
            fake.script.append(Turn([text("noted: the word is heron")]))
            first, ws = await open_session(client, "claude")
            await drive(ws, first, "remember the word heron")
            # Still running: resuming it would put two CLIs on one conversation.
            alive = await client.init(agent="claude", resume=first)
            assert alive["status"] == 409 and alive["body"]["error_code"] == "RESUME_SESSION_ALIVE"
        claude_id = _records(tmp_path)[first]["agent_session_id"]
        assert claude_id and claude_id != first  # Claude Code's own id, from system/init
        fresh = len(fake.main_requests())

        async with running_client(tmp_path, agents_file=path) as client:
            other = await client.init(agent="other", resume=first)
            assert other["status"] == 409
            assert other["body"]["error_code"] == "RESUME_AGENT_MISMATCH"
            fake.script.append(Turn([text("it was heron")]))
            sid, ws = await client.start_session(agent="claude", resume=first)
            await recv(ws), await recv(ws)  # capabilities, catalog
            frames = await drive(ws, sid, "which word was it?")
            assert of(frames, "agent.text.done")[-1]["text"] == "it was heron"
        # The CLI got the earlier conversation: it ran with --resume <Claude Code's id>.
        sent = json.dumps(fake.main_requests()[fresh:][-1]["messages"])
        assert "remember the word heron" in sent and "noted: the word is heron" in sent
        # The resumed CLI reports the same conversation id (it ran `--resume <that id>`), and
        # the new session records it too, so it can be resumed in its turn.
        resumed = _records(tmp_path)[sid]
        assert (resumed["agent_name"], resumed["agent_session_id"]) == ("claude", claude_id)


async def test_an_unknown_session_or_a_kind_that_cannot_resume_is_refused(tmp_path):
    async with running_client(tmp_path) as client:
        unknown = await client.init(agent="demo", resume="0b5c7f52-4f0a-4b7e-9a1e-3f2d6c1b8a90")
        assert unknown["status"] == 400 and unknown["body"]["error_code"] == "RESUME_UNSUPPORTED"
        bad = await client.init(agent="demo", resume="not-an-id")
        assert bad["status"] == 400 and bad["body"]["error_code"] == "INVALID_REQUEST"


async def test_a_fork_continues_a_copy_while_the_original_runs_on(tmp_path, node_agents):
    async with FakeAnthropic() as fake:
        env = model_env(fake.base_url, tmp_path / "home")
        path = write_agents_file(
            tmp_path,
            '[agents.claude]\nkind = "claude-code"\n'
            f"command = [{json.dumps(str(node_agents.claude))}]\nenv = {inline_table(env)}\n",
        )
        async with running_client(tmp_path, agents_file=path) as client:
            fake.script.append(Turn([text("noted: the word is heron")]))
            first, ws = await open_session(client, "claude")
            await drive(ws, first, "remember the word heron")
            original = _records(tmp_path)[first]["agent_session_id"]
            fake.script.append(Turn([text("the copy says heron")]))
            sid, fork_ws = await client.start_session(agent="claude", resume=first, fork=True)
            await recv(fork_ws), await recv(fork_ws)
            await drive(fork_ws, sid, "which word?")
            sent = json.dumps(fake.main_requests()[-1]["messages"])
            assert "remember the word heron" in sent  # the copy has the conversation
            copy = _records(tmp_path)[sid]["agent_session_id"]
            assert copy != original  # --fork-session: a new id, the original untouched
            fake.script.append(Turn([text("still here")]))
            frames = await drive(ws, first, "and you?")  # the original goes on beside it
            assert of(frames, "agent.text.done")[-1]["text"] == "still here"
            assert _records(tmp_path)[first]["agent_session_id"] == original
            alone = await client.init(agent="claude", fork=True)
            assert alone["status"] == 400  # fork names the session to copy
