"""Issue 15 §3 end to end: a turn whose tool prints an AWS key, a GitHub token, a PEM private
key and a `.env` value, and whose answer writes an AWS secret key in prose next to its key id
(issue 28 §4), through a real master, client (a jsonl script agent) and `rawp gateway`
process against the fake Discord and the fake Slack; none of them is in any call the
gateway made. A node the gateway's operator exempts is shown as is."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from tests.edge.stack import edge_for, running_stack
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.gateway.chat_stack import (
    discord_ready,
    discord_start,
    slack_checked,
    slack_start,
    start_discord_gateway,
    start_slack_gateway,
)

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"
SLACK = SlackWorld()
SLACK_OWNER = f"slack:{SLACK.team_id}:{SLACK.alice['id']}"

AWS_KEY = "AKIAIOSFODNN7EXAMPLQ"
GITHUB = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
PEM_BODY = "MIIEowIBAAKCAQEAuQ9fYm2nR4vT8xK1pL3sD6fG9hJ2kL5zX8cV1bN4mQ7wE0rT"
PEM = (
    f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n{PEM_BODY[::-1]}\n-----END RSA PRIVATE KEY-----"
)
ENV_VALUE = "tq84-Lmv0-Zr2x-Wa71"  # no known format: only the .env fingerprint finds it
# No format of its own: found as the secret written beside the key id (issue 28 §4).
AWS_SECRET = "q8Vb2+Lw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9W"

SCRIPT = textwrap.dedent(
    f"""
    import json, sys
    def emit(type, payload):
        print(json.dumps({{"type": type, "payload": payload}}), flush=True)
    env = open(".env").read()
    emit("tool.invoke.request", {{"invocation_id": "t1", "tool_name": "Bash",
         "input": {{"command": "cat .env"}}, "title": "cat .env && echo {GITHUB}"}})
    diff = "--- a/.env\\n+++ b/.env\\n@@ -0,0 +1,3 @@\\n" + "".join(
        "+" + line + "\\n" for line in env.splitlines())
    emit("tool.invoke.result", {{"invocation_id": "t1", "tool_name": "Bash",
         "status": "success", "output_type": "diff", "output": diff}})
    emit("agent.error", {{"code": "WARN", "severity": "warning",
         "message": "token " + {GITHUB!r} + " and " + {ENV_VALUE!r}}})
    emit("agent.text.done", {{"content_index": 0, "text": "Found:\\n```\\n" + env
         + {PEM!r} + "\\n```\\nAWS key id " + {AWS_KEY!r} + " with secret " + {AWS_SECRET!r}}})
    """
)


@pytest.fixture
def stack(tmp_path):
    with running_stack(tmp_path / "stack", OWNER) as made:
        yield made


def content(call) -> str:
    return json.dumps(call.body or {}, ensure_ascii=False)


async def node_id(stack) -> str:
    async with edge_for(stack.master_url, OWNER) as edge:
        status, body = await edge.call("GET", "/v1/edge/nodes")
        assert status == 200, body
        return next(n["node_id"] for n in body["nodes"] if n["device_name"] == "test-box")


def leaky_client(stack, tmp_path) -> None:
    """The stack's client again, offering the leaky agent in a workspace with a `.env`."""
    ws = stack.root
    (ws / ".env").write_text(
        f"AWS_ACCESS_KEY_ID={AWS_KEY}\nGITHUB_TOKEN={GITHUB}\nDB_PASSWORD={ENV_VALUE}\n"
    )
    (ws / "leak.py").write_text(SCRIPT)
    agents = tmp_path / "agents.toml"
    agents.write_text(
        '[agents.leaky]\nkind = "script"\nmode = "jsonl"\n'
        f'command = [{json.dumps(sys.executable)}, "leak.py"]\n'
    )
    stack.stop_client()
    stack.start_client("--agents-file", str(agents))


async def run_turn(stack, tmp_path, unredacted: str = "") -> tuple[str, str]:
    """One turn of the leaky agent; (the thread's posted messages, every call's body)."""
    leaky_client(stack, tmp_path)
    async with FakeDiscord(WORLD) as discord_fake:
        start_discord_gateway(
            stack.processes, stack, tmp_path, discord_fake, WORLD,
            RAWP_GATEWAY_UNREDACTED_NODES=unredacted,
        )  # fmt: skip
        await discord_ready(discord_fake)
        _, thread_id = await discord_start(discord_fake, "leaky")
        prompt = await discord_fake.inject_message("show me .env", channel_id=thread_id)
        await discord_fake.wait_for_call(
            "PUT", f"/channels/{thread_id}/messages/{prompt['id']}/reactions/✅/@me", timeout=60
        )
        posted = "\n".join(
            content(c) for c in discord_fake.calls("POST", f"/channels/{thread_id}/messages")
        )
        everything = "\n".join(
            content(c)
            for method in ("POST", "PATCH", "PUT")
            for c in discord_fake.log.find(method, "**")
        )
        return posted, everything


async def test_no_secret_reaches_discord(stack, tmp_path):
    posted, everything = await run_turn(stack, tmp_path)
    for kind in ("AWS access key", "AWS secret key", "GitHub token", "private key", ".env value"):
        assert f"[redacted: {kind}]" in posted
    assert "cat .env" in posted  # the tool line is still there, only the secrets are gone
    assert len(everything) > len(posted) > 0  # every call, not only the thread's messages
    for secret in (AWS_KEY, AWS_SECRET, GITHUB, PEM_BODY, PEM_BODY[::-1], ENV_VALUE):
        assert secret not in everything


async def test_a_node_the_operator_exempts_is_shown_as_is(stack, tmp_path):
    posted, _ = await run_turn(stack, tmp_path, unredacted=await node_id(stack))
    assert "[redacted:" not in posted
    for secret in (AWS_KEY, AWS_SECRET, GITHUB, PEM_BODY, ENV_VALUE):
        assert secret in posted


@pytest.fixture
def slack_stack(tmp_path):
    with running_stack(tmp_path / "stack", SLACK_OWNER) as made:
        yield made


async def test_no_secret_reaches_slack(slack_stack, tmp_path):
    stack = slack_stack
    leaky_client(stack, tmp_path)
    async with FakeSlack(SLACK) as slack:
        _, bolt = start_slack_gateway(stack.processes, stack, tmp_path, slack, SLACK)
        answer, thread_ts = await slack_start(slack, SLACK, bolt, "leaky")
        assert answer.status == 200
        event = SLACK.message_event("show me .env", thread_ts=thread_ts)
        await slack.post_event_to(bolt, event)
        await slack_checked(slack, event)
        posted = "\n".join(content(c) for c in slack.ok_calls("chat.postMessage"))
        everything = "\n".join(content(c) for c in slack.log.find("*", "**"))
        for kind in (
            "AWS access key",
            "AWS secret key",
            "GitHub token",
            "private key",
            ".env value",
        ):
            assert f"[redacted: {kind}]" in posted
        assert len(everything) > len(posted) > 0
        for secret in (AWS_KEY, AWS_SECRET, GITHUB, PEM_BODY, PEM_BODY[::-1], ENV_VALUE):
            assert secret not in everything
