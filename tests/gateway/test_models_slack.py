"""`/rawp model` through Slack (issue 30 §1): the real `rawp gateway` process in Slack HTTP mode
against the fake Slack, a real master and client, the real `claude` CLI against a fake
Anthropic API. The slash command is typed in the channel and acts on the user's newest session
there (a stranger has none: nothing is sent); the thread shows "Model: haiku" and the fake API
gets requests for Haiku; after a gateway restart the model is still known and sent again; an
agent without models answers in the thread why not."""

from __future__ import annotations

from tests.agents.conftest import node_agents  # noqa: F401 - the fixture the stack needs
from tests.agents.fake_anthropic import Turn, text
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import slack_start, slack_text, start_slack_gateway
from tests.gateway.modes_support import claude_stack_fixture

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"
OFFERED = "`sonnet` | `opus` | `haiku` | `claude-rawp-test`"
NO_SESSION = "No session in this conversation yet. Start one with the start command."

stack_and_model = claude_stack_fixture(OWNER)


async def test_haiku_from_slack_survives_a_restart_and_an_agent_without_models_says_so(
    stack_and_model, processes, tmp_path
):
    stack, model = stack_and_model
    async with model, FakeSlack(WORLD) as slack:
        gateway, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        _, thread_ts = await slack_start(slack, WORLD, bolt, "claude")
        answered: list = []  # the replies read so far

        async def command(words: str, user=None) -> str:
            typed = WORLD.slash_command("/rawp", f"model {words}".strip(), user=user)
            await slack.post_slash_command_to(bolt, typed)
            reply = await slack.log.wait_for_call(
                "POST",
                "/response-url/*",
                30,
                where=lambda c: c not in answered and not str(c.body["text"]).startswith("▶️"),
            )
            answered.append(reply)
            return str(reply.body["text"])

        async def posted(needle: str, where: str = thread_ts):
            return await slack.wait_for_call(
                "chat.postMessage",
                where=lambda c: needle in slack_text(c) and c.body.get("thread_ts") == where,
                timeout=90,
            )

        def model_lines() -> list[str]:
            return [
                slack_text(c)
                for c in slack.calls("chat.postMessage")
                if slack_text(c).startswith("Model:") and c.body.get("thread_ts") == thread_ts
            ]

        await posted("Agent mode")  # from the capabilities whose models are stored first
        assert await command("haiku", user=WORLD.bob) == NO_SESSION  # a stranger has none here
        assert await command("") == (
            f"Model: `claude-rawp-test`. Choose one with the model command: {OFFERED}."
        )
        assert "Asked the agent for model `haiku`" in await command("haiku")
        await posted("Model: haiku")
        model.script.append(Turn([text("Quick answer.")]))
        await slack.post_event_to(bolt, WORLD.message_event("be quick", thread_ts=thread_ts))
        await posted("Quick answer.")
        assert "haiku" in model.main_requests()[-1]["model"]

        gateway.terminate()
        gateway.wait(timeout=30)
        gateway, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        assert await command("") == (
            f"Model: `haiku`. Choose one with the model command: {OFFERED}."
        )
        model.script.append(Turn([text("Still quick.")]))
        await slack.post_event_to(bolt, WORLD.message_event("again", thread_ts=thread_ts))
        await posted("Still quick.")
        assert "haiku" in model.main_requests()[-1]["model"]
        assert model_lines() == ["Model: haiku"]

        # The demo agent has no models: the thread says so (its session.error).
        await slack.post_slash_command_to(bolt, WORLD.slash_command("/rawp", "start test-box demo"))
        parent = await slack.wait_for_call(
            "chat.postMessage", where=lambda c: slack_text(c).startswith("🧵"), count=2, timeout=60
        )
        demo_ts = parent.response["ts"]
        await posted("demo on test-box", demo_ts)
        assert "Asked the agent for model `opus`" in await command("opus")
        await posted("has no models to choose from", demo_ts)
