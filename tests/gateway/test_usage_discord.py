"""Usage and budgets in chat, end to end through Discord: a real master started with a budgets
file, a real client (the demo agent reports usage with a cost each turn), the real `rawp gateway`
process with `--usage-footer` against the fake Discord. A prompt over the daily cost budget is
refused in the thread with the budget named and its reset time; `/rawp usage` answers privately
with the same figures the master's node metrics endpoint gives for the same periods."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.usage import figures
from tests.edge.stack import EDGE_SECRET, edge_for, running_stack
from tests.fakes.discord_payloads import DiscordWorld, command_option
from tests.fakes.discord_server import FakeDiscord

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"
EPHEMERAL = 64


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    root = tmp_path_factory.mktemp("usage-stack")
    budgets = root / "budgets.toml"
    # The demo agent's first turn costs about $0.002: the second prompt finds the day spent.
    budgets.write_text("[default]\ncost_per_day = 0.001\n")
    with running_stack(root, OWNER, master_extra=("--budgets", str(budgets))) as made:
        yield made


def sub(name: str, *options: dict) -> list[dict]:
    return [{"type": 1, "name": name, "options": list(options)}]


def content(call) -> str:
    return str((call.body or {}).get("content") or "")


async def test_budget_refusal_footer_and_usage_in_discord(stack, processes, tmp_path):
    async with FakeDiscord(WORLD) as discord_fake:
        env = {
            "RAWP_EDGE_SECRET": EDGE_SECRET,
            "DISCORD_BOT_TOKEN": WORLD.bot_token,
            "DISCORD_API_BASE_URL": discord_fake.api_base_url,
            "DISCORD_GATEWAY_URL": discord_fake.gateway_url,
            "SLACK_BOT_TOKEN": "",
            "RAWP_PLATFORM": "",
            "RAWP_USAGE_FOOTER": "1",
        }
        processes.rawp(
            "gateway", "--master-url", stack.master_url, "--state-dir", str(tmp_path / "gw"),
            "--workspace", str(stack.root), env=env,
        )  # fmt: skip
        await discord_fake.wait_for_ready_client(timeout=60)
        await discord_fake.wait_for_call("PUT", "/applications/*/commands", timeout=30)
        await discord_fake.inject_slash_command(
            "rawp",
            sub("start", command_option("node", "test-box"), command_option("agent", "demo")),
        )
        made = await discord_fake.wait_for_call("POST", "/channels/*/threads", timeout=60)
        thread_id = made.response["id"]
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
        tomorrow = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%d")
        text = content(line)
        assert text.startswith("🛑 **Budget reached**: Your cost per day budget ($0.0010)")
        assert f"resets at {tomorrow} 00:00 UTC" in text
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
            assert metrics["aggregated_usage"]["estimated_cost"] > 0.001
        session_line = next(s for s in shown.splitlines() if s.startswith("This session"))
        # The session's figures are the first turn's: the footer showed the same.
        assert content(footer).removeprefix("📊 ") == session_line.split("): ", 1)[1]
        assert "cost per day (you)" in shown
