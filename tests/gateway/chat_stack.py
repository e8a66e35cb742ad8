"""The scaffolding of the end-to-end chat tests: the real `rawp gateway` process pointed at the
fake Discord or the fake Slack (HTTP mode), waiting until it is up, and `/rawp start` run
through the platform to get a session's thread. The tests keep their own assertions."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.edge_client import EdgeClient
from gateway.sessions.conversations import ConversationService, ConversationSettings
from gateway.storage.conversation_store import ConversationStore
from tests.edge.stack import EDGE_SECRET, running_stack
from tests.fakes.discord_payloads import DiscordWorld, command_option
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.support import free_port, wait_for_http


def module_stack(name: str, owner: str):
    """A module-scoped `stack` fixture: a real master and client for `owner`, under a temporary
    directory named `name`, shared by the module's tests (assign it to `stack`)."""

    @pytest.fixture(scope="module")
    def stack(tmp_path_factory):
        with running_stack(tmp_path_factory.mktemp(name), owner) as made:
            yield made

    return stack


NO_PLATFORM_LIMITS = "*=1000/s"


def discord_env(fake: FakeDiscord, world: DiscordWorld, **extra: str) -> dict[str, str]:
    """The gateway's environment for the fake Discord; `extra` adds settings (RAWP_…)."""
    return {
        "RAWP_EDGE_SECRET": EDGE_SECRET,
        "DISCORD_BOT_TOKEN": world.bot_token,
        "DISCORD_API_BASE_URL": fake.api_base_url,
        "DISCORD_GATEWAY_URL": fake.gateway_url,
        "SLACK_BOT_TOKEN": "",
        "RAWP_PLATFORM": "",
        # The fakes enforce no rate limit: the published ones would only slow these tests
        # (the budget's own tests inject theirs: tests/gateway/test_platform_budget*.py).
        "RAWP_GATEWAY_PLATFORM_LIMITS": NO_PLATFORM_LIMITS,
        **extra,
    }


def slack_env(slack: FakeSlack, world: SlackWorld, port: int, **extra: str) -> dict[str, str]:
    """The gateway's environment for the fake Slack, its Bolt endpoint served on `port`."""
    return {
        "RAWP_EDGE_SECRET": EDGE_SECRET,
        "SLACK_BOT_TOKEN": world.bot_token,
        "SLACK_MODE": "http",
        "SLACK_SIGNING_SECRET": world.signing_secret,
        "SLACK_API_BASE_URL": slack.api_base_url,
        "SLACK_HTTP_HOST": "127.0.0.1",
        "SLACK_HTTP_PORT": str(port),
        "DISCORD_BOT_TOKEN": "",
        "RAWP_PLATFORM": "",
        # The fakes enforce no rate limit: the published ones would only slow these tests
        # (the budget's own tests inject theirs: tests/gateway/test_platform_budget*.py).
        "RAWP_GATEWAY_PLATFORM_LIMITS": NO_PLATFORM_LIMITS,
        **extra,
    }


def gateway_args(stack: Any, tmp_path: Path, *extra: str) -> list[str]:
    """`rawp gateway` against the stack's master, its state under tmp_path/gw."""
    return [
        "gateway", "--master-url", stack.master_url,
        "--state-dir", str(tmp_path / "gw"), "--workspace", str(stack.root), *extra,
    ]  # fmt: skip


def bolt_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/slack/events"


def start_slack_gateway(
    processes, stack, tmp_path: Path, slack: FakeSlack, world: SlackWorld, **env: str
):
    """The gateway process on a free port: (the process, its Bolt endpoint), once that answers;
    `env` adds settings."""
    port = free_port()
    env = slack_env(slack, world, port, **env)
    gateway = processes.rawp(*gateway_args(stack, tmp_path), env=env)
    bolt = bolt_url(port)
    wait_for_http(bolt, proc=gateway, timeout=60)
    return gateway, bolt


def start_discord_gateway(
    processes, stack, tmp_path: Path, fake: FakeDiscord, world: DiscordWorld, *args: str, **env: str
):
    """The gateway process for the fake Discord; `args` add flags, `env` adds settings."""
    return processes.rawp(
        *gateway_args(stack, tmp_path, *args), env=discord_env(fake, world, **env)
    )


def content(call) -> str:
    """The text of a message the bot posted or edited on the fake Discord."""
    return str((call.body or {}).get("content") or "")


def buttons(call) -> list[dict]:
    """The buttons of a message the bot posted on the fake Discord."""
    return [
        component
        for row in (call.body or {}).get("components") or []
        for component in row.get("components", [])
    ]


async def discord_ready(fake: FakeDiscord) -> None:
    """The bot logged in to the fake Discord and registered its slash commands."""
    await fake.wait_for_ready_client(timeout=60)
    await fake.wait_for_call("PUT", "/applications/*/commands", timeout=30)


def sub(name: str, *options: dict) -> list[dict]:
    """The options of `/rawp <name> …` as Discord sends a subcommand."""
    return [{"type": 1, "name": name, "options": list(options)}]


async def discord_start(fake: FakeDiscord, agent: str = "demo") -> tuple[dict, str]:
    """`/rawp start test-box <agent>`: (the interaction sent, the id of the thread it made)."""
    options = (command_option("node", "test-box"), command_option("agent", agent))
    command = await fake.inject_slash_command("rawp", sub("start", *options))
    made = await fake.wait_for_call("POST", "/channels/*/threads", timeout=60)
    return command, made.response["id"]


def slack_text(call) -> str:
    return str(call.body.get("text") or "")


async def slack_start(slack: FakeSlack, world: SlackWorld, bolt: str, agent: str = "demo"):
    """`/rawp start test-box <agent>`: (the slash command's HTTP answer, the thread's ts)."""
    answer = await slack.post_slash_command_to(
        bolt, world.slash_command("/rawp", f"start test-box {agent}")
    )
    parent = await slack.wait_for_call(
        "chat.postMessage", where=lambda c: slack_text(c).startswith("🧵"), timeout=60
    )
    return answer, parent.response["ts"]


async def slack_greeting(slack: FakeSlack) -> None:
    """The session's greeting, posted in its thread after the parent."""
    await slack.wait_for_call(
        "chat.postMessage",
        where=lambda c: "Every message in this thread" in slack_text(c),
        timeout=30,
    )


async def slack_checked(slack: FakeSlack, event: dict, within: float = 60) -> None:
    """✅ on the message `event` (its turn ended)."""
    await slack.wait_for_call(
        "reactions.add",
        where=lambda c: (
            c.body.get("name") == "white_check_mark" and c.body.get("timestamp") == event["ts"]
        ),
        timeout=within,
    )


@contextlib.asynccontextmanager
async def conversation_service(stack, tmp_path: Path) -> AsyncIterator[ConversationService]:
    """The conversation layer in this process against the stack's master, as `rawp gateway`
    builds it (the test binds a platform to it); closed with its store and edge client."""
    edge = EdgeClient(stack.master_url, EDGE_SECRET)
    store = await ConversationStore.open(tmp_path / "conversations.sqlite3")
    service = ConversationService(edge, store, ConversationSettings(workspace_path=str(stack.root)))
    try:
        yield service
    finally:
        await service.close()
        await store.close()
        await edge.close()


def slack_button_click(world: SlackWorld, question, thread_ts: str, label: str) -> dict:
    """The `block_actions` payload of pressing the button labelled `label` on the posted
    `question` (a `chat.postMessage` call) in the thread `thread_ts`."""
    blocks = question.body.get("blocks") or []
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    block_id, button = next(
        (block.get("block_id", "actions"), element)
        for block in blocks
        if block.get("type") == "actions"
        for element in block.get("elements", [])
        if element["text"]["text"] == label
    )
    message = {**question.body, "ts": question.response["ts"], "thread_ts": thread_ts}
    return world.block_actions(
        button["action_id"], button["value"], message=message, block_id=block_id
    )


def renderer_states(service: ConversationService) -> str:
    """What each live session's renderer holds now, for a test whose wait for a decoration
    (✅ on the prompt) ran out: whether the turn ended, and whether it knew its prompt's
    chat message (without it no reaction is made)."""
    lines = []
    for session_id, live in service.live.items():
        core = live.renderer.core
        turn = core.turn
        current = "none" if turn is None else f"{turn.turn_id} (message {turn.user_message})"
        lines.append(
            f"session {session_id}: current turn {current}; ended {list(core._ended)}; "
            f"prompts not started {list(core.origins)}; link ended {live.link.ended}"
        )
    return "\n".join(lines) or "no live session"
