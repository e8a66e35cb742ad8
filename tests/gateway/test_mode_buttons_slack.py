"""The mode buttons through Slack (issue 30 §1): the real `rawp gateway` process in Slack HTTP
mode against the fake Slack, a real master and client, the real `claude` CLI against a fake
Anthropic API.

The thread gets one "🎛 Agent mode" message with a Block Kit button per mode; a stranger's press
is refused with an ephemeral message and changes nothing; the owner's press switches the agent
and the message is updated (`style: primary` on the new mode); after a gateway restart the same
button still works and the message is not posted again. With three replicas, a press that
reaches one which does not render the session is carried out by the one that does."""

from __future__ import annotations

import asyncio
import json

from tests.agents.conftest import node_agents  # noqa: F401 - the fixture the stack needs
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import (
    bolt_url,
    slack_env,
    slack_start,
    slack_text,
    start_slack_gateway,
)
from tests.gateway.modes_support import claude_stack_fixture
from tests.gateway.replicas_support import (  # noqa: F401 (shared_store: a fixture)
    REPLICAS,
    Gateways,
    shared_store,
)
from tests.scale.conftest import redis_prefix  # noqa: F401 (a fixture)
from tests.support import free_port, wait_for_http

WORLD = SlackWorld()
OWNER = f"slack:{WORLD.team_id}:{WORLD.alice['id']}"
NOT_ALLOWED = "Only this session's owner or an approver can change its mode."

stack_and_model = claude_stack_fixture(OWNER)


def mode_buttons(call) -> dict[str, dict]:
    blocks = call.body.get("blocks") or []
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    return {
        element["text"]["text"]: element
        for block in blocks
        if block.get("type") == "actions"
        for element in block["elements"]
    }


def primary(call) -> list[str]:
    return [name for name, b in mode_buttons(call).items() if b.get("style") == "primary"]


class Thread:
    """The session's thread on the fake Slack and its mode message."""

    def __init__(self, slack: FakeSlack, thread_ts: str) -> None:
        self.slack, self.thread_ts = slack, thread_ts
        self.row = None

    def is_row(self, call) -> bool:
        return slack_text(call).startswith("🎛 Agent mode") and (
            call.body.get("thread_ts") == self.thread_ts
        )

    async def mode_message(self):
        self.row = await self.slack.wait_for_call("chat.postMessage", where=self.is_row, timeout=90)
        return self.row

    async def press(self, bolt: str, mode: str, user: dict) -> str:
        """Press `mode` as `user` through the endpoint `bolt`: the ephemeral answer's text."""
        button = mode_buttons(self.row)[mode]
        message = {**self.row.body, "ts": self.row.response["ts"], "thread_ts": self.thread_ts}
        click = WORLD.block_actions(
            button["action_id"], button["value"], message=message, block_id="rawp_modes", user=user
        )

        def theirs(call) -> bool:
            return call.body.get("user") == user["id"]

        seen = len([c for c in self.slack.calls("chat.postEphemeral") if theirs(c)])
        await self.slack.post_interactive_to(bolt, click)
        answer = await self.slack.wait_for_call(
            "chat.postEphemeral", count=seen + 1, where=theirs, timeout=60
        )
        return slack_text(answer)

    def updated(self, mode: str):
        return lambda c: c.body.get("ts") == self.row.response["ts"] and primary(c) == [mode]

    async def switched(self, mode: str) -> None:
        """The thread says the agent is in `mode`, and the buttons mark it."""
        await self.slack.wait_for_call(
            "chat.postMessage",
            where=lambda c: (
                f"Mode: {mode}" in slack_text(c) and c.body.get("thread_ts") == self.thread_ts
            ),
            timeout=90,
        )
        await self.slack.wait_for_call("chat.update", where=self.updated(mode), timeout=60)


async def test_mode_buttons_refuse_a_stranger_and_work_after_a_gateway_restart(
    stack_and_model, processes, tmp_path
):
    stack, model = stack_and_model
    async with model, FakeSlack(WORLD) as slack:
        gateway, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)
        _, thread_ts = await slack_start(slack, WORLD, bolt, "claude")
        thread = Thread(slack, thread_ts)
        row = await thread.mode_message()
        assert set(mode_buttons(row)) == {"plan", "ask", "accept-edits"}

        assert await thread.press(bolt, "plan", WORLD.bob) == NOT_ALLOWED
        assert not [c for c in slack.calls("chat.update") if thread.updated("plan")(c)]

        assert "Asked the agent for mode `plan`" in await thread.press(bolt, "plan", WORLD.alice)
        await thread.switched("plan")

        gateway.terminate()
        gateway.wait(timeout=30)
        gateway, bolt = start_slack_gateway(processes, stack, tmp_path, slack, WORLD)

        answer = await thread.press(bolt, "accept-edits", WORLD.alice)
        assert "Asked the agent for mode `accept-edits`" in answer
        await thread.switched("accept-edits")
        assert len([c for c in slack.calls("chat.postMessage") if thread.is_row(c)]) == 1


async def test_a_press_at_another_replica_reaches_the_sessions_renderer(
    stack_and_model,
    processes,
    tmp_path,
    redis_prefix,  # noqa: F811
    shared_store,  # noqa: F811
):
    stack, model = stack_and_model
    client, prefix = redis_prefix
    async with model, FakeSlack(WORLD) as slack:
        bolts: list[str] = [""] * REPLICAS

        def env_for(n: int) -> dict[str, str]:
            port = free_port()
            bolts[n] = bolt_url(port)
            return slack_env(slack, WORLD, port)

        async def probe(n: int) -> bool:
            try:
                await asyncio.to_thread(wait_for_http, bolts[n], 0.5)
            except TimeoutError:
                return False
            return True

        gateways = Gateways(processes, stack, tmp_path, prefix, env_for, probe, shared_store)
        try:
            for n in range(REPLICAS):
                gateways.start(n)
            for n in range(REPLICAS):
                await gateways.up(n)
            _, thread_ts = await slack_start(slack, WORLD, bolts[0], "claude")
            thread = Thread(slack, thread_ts)
            await thread.mode_message()
            holder = await gateways.holder(client)
            other = next(n for n in range(REPLICAS) if n != holder)

            assert await thread.press(bolts[other], "plan", WORLD.bob) == NOT_ALLOWED
            answer = await thread.press(bolts[other], "plan", WORLD.alice)
            assert "Asked the agent for mode `plan`" in answer
            await thread.switched("plan")
            assert await gateways.holder(client) == holder  # carried out where it is rendered
        finally:
            gateways.stop()
