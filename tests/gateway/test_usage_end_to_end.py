"""Usage and budgets end to end: a real master process started with a budgets file and a real
client (the demo agent reports usage with a cost each turn). At the edge (a WebSocket written
here), a prompt over budget is refused with the budget named and never reaches the agent. In
chat, through the real `rawp gateway` process with `--usage-footer` against the fake Discord,
the refusal shows in the thread with the budget and its reset time, and `/rawp usage` answers
privately with the same figures the master's node metrics endpoint gives for those periods."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from gateway.rendering.usage import figures
from tests.edge.stack import demo_session, edge_for, frame, recv, recv_until, running_stack
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import (
    content,
    discord_ready,
    discord_start,
    start_discord_gateway,
    sub,
)

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"
EPHEMERAL = 64


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    root = tmp_path_factory.mktemp("usage-stack")
    budgets = root / "budgets.toml"
    # A session's first turn (about 15 tokens) passes its tokens budget: the second prompt of
    # every session is refused, whatever else ran on this stack. The monthly budget is far off.
    budgets.write_text("[default]\ntokens_per_session = 5\ncost_per_month = 1000\n")
    with running_stack(root, OWNER, master_extra=("--budgets", str(budgets))) as made:
        yield made


async def test_a_prompt_over_budget_is_refused_at_the_edge(stack):
    async with edge_for(stack.master_url, OWNER) as edge:
        _, sid, ws = await demo_session(edge, stack.root)
        await ws.send(frame("control.prompt.request", {"prompt_text": "first"}, sid))
        turn = await recv_until(ws, "session.turn.end")
        assert "session.usage" in {f["type"] for f in turn}

        second = frame("control.prompt.request", {"prompt_text": "second"}, sid)
        await ws.send(second)
        refusal = await recv(ws)
        assert refusal["type"] == "session.error", refusal
        payload = refusal["payload"]
        assert payload["code"] == "BUDGET_EXCEEDED"
        assert payload["ref_message_id"] == orjson.loads(second)["message_id"]
        assert payload["message"].startswith("Your tokens per session budget (5 tokens) is used")
        assert payload["message"].endswith("It resets with a new session.")
        assert payload["budget"]["name"] == "tokens_per_session"

        # The refused prompt never reached the agent: the session used the first turn's tokens
        # and nothing more.
        status, report = await edge.call("GET", f"/v1/edge/usage?session_id={sid}")
        assert status == 200
        used = report["session"]["usage"]
        assert used["total_input_tokens"] + used["total_output_tokens"] == sum(
            f["payload"]["input_tokens"] + f["payload"]["output_tokens"]
            for f in turn
            if f["type"] == "session.usage"
        )
        budgets = {b["name"]: b for b in report["budgets"]}
        assert budgets["tokens_per_session"]["spent"] > 5


async def test_budget_refusal_footer_and_usage_in_discord(stack, processes, tmp_path):
    async with FakeDiscord(WORLD) as discord_fake:
        start_discord_gateway(
            processes, stack, tmp_path, discord_fake, WORLD, RAWP_USAGE_FOOTER="1"
        )
        await discord_ready(discord_fake)
        _, thread_id = await discord_start(discord_fake)
        messages = f"/channels/{thread_id}/messages"

        # The first turn is within budget and ends with the footer the gateway was asked for.
        await discord_fake.inject_message("hello", channel_id=thread_id)
        footer = await discord_fake.wait_for_call(
            "POST", messages, where=lambda c: content(c).startswith("📊"), timeout=60
        )
        assert " in / " in content(footer) and "out tokens · $0.0" in content(footer)

        # The second is refused at the master: the budget named, and when it resets.
        refused = await discord_fake.inject_message("and again", channel_id=thread_id)
        line = await discord_fake.wait_for_call(
            "POST", messages, where=lambda c: "Budget reached" in content(c), timeout=60
        )
        text = content(line)
        assert text.startswith("🛑 **Budget reached**: Your tokens per session budget (5 tokens)")
        assert text.endswith("It resets with a new session.")
        await discord_fake.wait_for_call(
            "PUT", f"{messages}/{refused['id']}/reactions/❌/@me", timeout=30
        )
        assert not any("and again" in content(c) for c in discord_fake.calls("POST", messages))

        # /rawp usage in the thread: privately, the master's own figures.
        asked = await discord_fake.inject_slash_command("rawp", sub("usage"), channel_id=thread_id)
        webhook = f"/webhooks/{WORLD.application_id}/{asked['token']}"
        answer = await discord_fake.wait_for_call("POST", webhook, timeout=30)
        assert answer.body["flags"] == EPHEMERAL
        shown = content(answer)
        async with edge_for(stack.master_url, OWNER) as edge:
            status, nodes = await edge.call("GET", "/v1/edge/nodes")
            node_id = nodes["nodes"][0]["node_id"]
            for period, title in (("today", "Today"), ("month", "This month")):
                status, metrics = await edge.call(
                    "GET", f"/v1/edge/nodes/{node_id}/metrics?period={period}"
                )
                assert status == 200
                expected = figures(metrics["aggregated_usage"])
                assert f"{title}: {expected}" in shown, shown
                assert f"  • test-box: {expected}" in shown, shown
            assert metrics["aggregated_usage"]["estimated_cost"] > 0
        session_line = next(s for s in shown.splitlines() if s.startswith("This session"))
        # The session's figures are the first turn's: the footer showed the same.
        assert content(footer).removeprefix("📊 ") == session_line.split("): ", 1)[1]
        now = datetime.now(UTC)
        first = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)
        assert "• cost per month (you): $0.0" in shown
        assert f"of $1,000.00 (0%), resets {first:%Y-%m-%d} 00:00 UTC" in shown
        assert "• tokens per session (you): " in shown
