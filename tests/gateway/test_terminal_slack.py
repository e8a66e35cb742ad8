"""A session started from the terminal, picked up in Slack (issue 30 §2): the real `claude` CLI
is run on the machine outside RAWP (the HOME the client gives its claude agent, in the
workspace) against the fake Anthropic API; then, through the real `rawp gateway` in Slack HTTP
mode against the fake Slack, a real master and client, `/rawp resume` lists it and
`/rawp resume 1` picks it up in a new thread that remembers the conversation. A stranger sees
none and picks up none, through chat or the Edge API."""

from __future__ import annotations

import json

from tests.agents.conftest import model_env, node_agents  # noqa: F401 - the fixture
from tests.agents.fake_anthropic import Turn, text
from tests.agents.terminal_support import claude_in_terminal
from tests.edge.stack import edge_for
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import slack_text, start_slack_gateway
from tests.gateway.modes_support import claude_stack_fixture

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"
STRANGER = f"slack:{WORLD.team_id}:{WORLD.bob['id']}"

stack_and_model = claude_stack_fixture(OWNER)


async def test_a_terminal_session_is_listed_and_picked_up_from_slack(
    stack_and_model, processes, tmp_path
):
    stack, model = stack_and_model
    async with model, FakeSlack(WORLD) as slack:
        env = model_env(model.base_url, tmp_path / "home")  # the client's claude's HOME
        model.script.append(Turn([text("noted: kestrel")]))
        mine = await claude_in_terminal(stack.claude, env, stack.root, "remember the word kestrel")
        _, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        answered: list = []

        async def rawp(words: str, user=None) -> str:
            await slack.post_slash_command_to(bolt, WORLD.slash_command("/rawp", words, user=user))
            reply = await slack.log.wait_for_call(
                "POST", "/response-url/*", 60, where=lambda c: c not in answered
            )
            answered.append(reply)
            return str(reply.body["text"])

        listed = await rawp("resume")
        assert f"1. `{mine[:8]}` remember the word kestrel — claude on test-box" in listed, listed
        assert (await rawp("resume list")) == listed

        # A stranger: no conversation of theirs, and Alice's cannot be named.
        assert (await rawp("resume", user=WORLD.bob)).startswith("No session in this")
        node = stack.node_id or (await _node_of(stack.master_url))
        refused = await rawp(f"resume {node}:{mine}", user=WORLD.bob)
        assert refused.startswith("No conversation"), refused
        async with edge_for(stack.master_url, STRANGER) as edge:
            status, body = await edge.call("GET", f"/v1/edge/nodes/{node}/agent-sessions")
            assert (status, body["error_code"]) == (404, "NODE_NOT_FOUND")
            start = {"agent_name": "claude", "resume_conversation": mine}
            status, body = await edge.call("POST", f"/v1/edge/nodes/{node}/sessions", start)
            assert (status, body["error_code"]) == (404, "NODE_NOT_FOUND")

        picked = await rawp("resume 1")
        assert picked.startswith(f"🔁 Picked up `{mine[:8]}`"), picked
        parent = await slack.wait_for_call(
            "chat.postMessage", where=lambda c: slack_text(c).startswith("🧵"), timeout=60
        )
        thread_ts = parent.response["ts"]
        model.script.append(Turn([text("it was kestrel")]))
        await slack.post_event_to(bolt, WORLD.message_event("which word?", thread_ts=thread_ts))
        await slack.wait_for_call(
            "chat.postMessage",
            where=lambda c: "it was kestrel" in slack_text(c) and c.body["thread_ts"] == thread_ts,
            timeout=90,
        )
        sent = json.dumps(model.main_requests()[-1]["messages"])
        assert "remember the word kestrel" in sent and "noted: kestrel" in sent
        # Picked up, it is a RAWP session now: no longer offered from the terminal.
        assert (await rawp("resume list")).startswith("No session in this conversation, and no")


async def _node_of(master_url: str) -> str:
    async with edge_for(master_url, OWNER) as edge:
        status, body = await edge.call("GET", "/v1/edge/nodes")
        assert status == 200, body
        return body["nodes"][0]["node_id"]
