"""`/rawp model` through Discord (issue 30 §1): the real `rawp gateway` process against the fake
Discord, a real master and client, and the real `claude` CLI against a fake Anthropic API.

The models the agent offers are autocompleted; only the owner changes the model; the thread
shows "Model: opus" once the agent says so; the fake API then gets requests for Opus; after a
gateway restart the model is still known, sent again, and not shown twice. An ACP agent (the
fake one) that has not started yet takes the model by name once it runs, from its model config
option."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.agents.conftest import node_agents  # noqa: F401 - the fixture the stack needs
from tests.agents.fake_anthropic import Turn, text
from tests.agents.test_models import FAKE_ACP, MODEL, THOUGHT
from tests.edge.stack import start_stack
from tests.fakes.discord_payloads import DiscordWorld, command_option
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import (
    content,
    discord_ready,
    discord_start,
    start_discord_gateway,
    sub,
)
from tests.gateway.modes_support import claude_stack_fixture
from tests.support import Processes

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"
OFFERED = "`sonnet` | `opus` | `haiku` | `claude-rawp-test`"

stack_and_model = claude_stack_fixture(OWNER)


async def model_command(fake: FakeDiscord, thread_id: str, *option, user=None) -> str:
    """`/rawp model [model]` in the thread: the private reply's text."""
    options = [command_option("model", option[0])] if option else []
    command = await fake.inject_slash_command(
        "rawp", sub("model", *options), channel_id=thread_id, user_payload=user or WORLD.alice
    )
    webhook = f"/webhooks/{WORLD.application_id}/{command['token']}"
    return content(await fake.wait_for_call("POST", webhook, timeout=60))


async def test_the_owner_chooses_opus_and_it_survives_a_gateway_restart(
    stack_and_model, processes, tmp_path
):
    stack, model = stack_and_model
    async with model, FakeDiscord(WORLD) as fake:
        gateway = start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await discord_ready(fake)
        _, thread_id = await discord_start(fake, "claude")
        posts = f"/channels/{thread_id}/messages"
        # The mode buttons come from the same `session.capabilities`, after its models are
        # stored (gateway.rendering.render): once they are there, the store knows the models.
        await fake.wait_for_call("POST", posts, where=lambda c: "Agent mode" in content(c))

        def model_lines() -> list[str]:
            return [content(c) for c in fake.calls("POST", posts) if content(c).startswith("Model")]

        refused = await model_command(fake, thread_id, "opus", user=WORLD.bob)
        assert refused == "Only this session's owner or an approver can change its model."
        assert await model_command(fake, thread_id) == (
            f"Model: `claude-rawp-test`. Choose one with the model command: {OFFERED}."
        )
        typed = sub("model", command_option("model", "op", focused=True))
        asked = await fake.inject_autocomplete("rawp", typed, channel_id=thread_id)
        answer = await fake.wait_for_interaction_answer(asked)
        assert answer.body["data"]["choices"] == [{"name": "opus", "value": "opus"}]

        assert await model_command(fake, thread_id, "gpt-9") == (
            f"❌ This agent offers {OFFERED}, not “gpt-9”."
        )
        assert "Asked the agent for model `opus`" in await model_command(fake, thread_id, "Opus")
        await fake.wait_for_call("POST", posts, where=lambda c: content(c) == "Model: opus")

        model.script.append(Turn([text("Deep answer.")]))
        await fake.inject_message("think hard", channel_id=thread_id)
        await fake.wait_for_call(
            "POST", posts, where=lambda c: "Deep answer." in content(c), timeout=90
        )
        assert "opus" in model.main_requests()[-1]["model"]  # the CLI started with --model

        gateway.terminate()
        gateway.wait(timeout=30)
        identified = len(fake.calls("WS", "IDENTIFY"))
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await fake.wait_for_call("WS", "IDENTIFY", count=identified + 1, timeout=60)
        await fake.wait_for_ready_client(timeout=60)
        assert await model_command(fake, thread_id) == (
            f"Model: `opus`. Choose one with the model command: {OFFERED}."
        )
        model.script.append(Turn([text("Still deep.")]))
        await fake.inject_message("go on", channel_id=thread_id)
        await fake.wait_for_call(
            "POST", posts, where=lambda c: "Still deep." in content(c), timeout=90
        )
        assert "opus" in model.main_requests()[-1]["model"]
        assert model_lines() == ["Model: opus"]  # re-sent on revival, not shown again


@pytest.fixture
def acp_stack(tmp_path: Path):
    """A stack whose `configured` agent is the fake ACP agent offering a model config option
    and a thought level (tests/agents/fake_acp.py): each answer names what it is set to."""
    transcript = tmp_path / "configured.json"
    turns = [{"updates": [], "response": {"stopReason": "end_turn"}}] * 3
    transcript.write_text(json.dumps({"turns": turns, "config_options": [THOUGHT, MODEL]}))
    command = json.dumps([sys.executable, str(FAKE_ACP), str(transcript)])
    file = tmp_path / "agents.toml"
    file.write_text(f'[agents.configured]\nkind = "acp"\ncommand = {command}\n')
    processes = Processes()
    made = None
    try:
        made = start_stack(processes, tmp_path / "stack", OWNER)
        made.start_client("--agents-file", str(file))
        yield made
    finally:
        if made is not None:
            made.proxy.close()
        processes.close()


async def test_an_acp_agents_model_option_is_chosen_before_it_runs(acp_stack, processes, tmp_path):
    async with FakeDiscord(WORLD) as fake:
        start_discord_gateway(processes, acp_stack, tmp_path, fake, WORLD)
        await discord_ready(fake)
        _, thread_id = await discord_start(fake, "configured")
        posts = f"/channels/{thread_id}/messages"
        # Not started yet: no models known, so the name goes as typed and the client matches
        # it once the agent runs ("deep" is the name of `deep-2`).
        assert await model_command(fake, thread_id) == (
            "Model: the agent's own. Choose one with the model command: none announced yet."
        )
        assert "Asked the agent for model `deep`" in await model_command(fake, thread_id, "deep")
        await fake.wait_for_call("POST", posts, where=lambda c: content(c) == "Model: deep-2")
        await fake.inject_message("hello", channel_id=thread_id)
        await fake.wait_for_call(
            "POST", posts, where=lambda c: "model=deep-2" in content(c), timeout=60
        )
        assert await model_command(fake, thread_id, "huge") == (
            "❌ This agent offers `fast-1` | `deep-2`, not “huge”."
        )
