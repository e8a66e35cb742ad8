"""End to end through Discord: a real master and client (processes, the demo agent), the real
`rawp gateway` process pointed at the fake Discord (DISCORD_API_BASE_URL, DISCORD_GATEWAY_URL),
and events injected through discord.py's own parsing. One full turn with an approval, checked
on the calls the gateway made to the fake Discord."""

from __future__ import annotations

from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import (
    buttons,
    content,
    discord_env,
    discord_ready,
    discord_start,
    gateway_args,
    module_stack,
)

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"


stack = module_stack("discord-stack", OWNER)


async def test_a_turn_with_an_approval_through_discord(stack, processes, tmp_path):
    async with FakeDiscord(WORLD) as discord_fake:
        env = discord_env(discord_fake, WORLD)
        gateway = processes.rawp(*gateway_args(stack, tmp_path), env=env)
        await discord_ready(discord_fake)

        # /rawp start → a thread, the greeting inside it, a private answer to the command
        start, thread_id = await discord_start(discord_fake)
        greeting = await discord_fake.wait_for_call(
            "POST", f"/channels/{thread_id}/messages", timeout=30
        )
        assert "Every message in this thread is a prompt" in content(greeting)
        webhook = f"/webhooks/{WORLD.application_id}/{start['token']}"
        answer = await discord_fake.wait_for_call("POST", webhook, timeout=30)
        assert "demo on test-box" in content(answer)

        # A message in the thread is the prompt; the agent asks for approval first.
        prompt = await discord_fake.inject_message("please approve this", channel_id=thread_id)
        question = await discord_fake.wait_for_call(
            "POST",
            f"/channels/{thread_id}/messages",
            where=lambda c: "Apply the change" in content(c),
            timeout=60,
        )
        allow = next(b for b in buttons(question) if b.get("label") == "Allow once")
        await discord_fake.inject_button(allow["custom_id"], message=question.response)

        # The rest of the turn: the tool line with its diff, the answer, ✅ on the prompt.
        await discord_fake.wait_for_call(
            "POST",
            f"/channels/{thread_id}/messages",
            where=lambda c: "You chose: allow" in content(c),
            timeout=60,
        )
        await discord_fake.wait_for_call(
            "PUT", f"/channels/{thread_id}/messages/{prompt['id']}/reactions/✅/@me", timeout=30
        )
        texts = [content(c) for c in discord_fake.calls("POST", f"/channels/{thread_id}/messages")]
        tool = next(i for i, t in enumerate(texts) if t.startswith("✅ Edit") and "```diff" in t)
        said = next(i for i, t in enumerate(texts) if 'You said: "please approve this"' in t)
        assert tool < said
        assert discord_fake.calls("POST", f"/channels/{thread_id}/typing")

        gateway.terminate()
        assert gateway.wait(timeout=30) == 0

        # The thread ↔ session binding survives a restart: the same thread still prompts.
        processes.rawp(*gateway.args[3:], env=env)
        await discord_fake.wait_for_call("WS", "IDENTIFY", timeout=60, count=2)
        await discord_fake.wait_for_ready_client(timeout=60)
        await discord_fake.inject_message("hello again", channel_id=thread_id)
        await discord_fake.wait_for_call(
            "POST",
            f"/channels/{thread_id}/messages",
            where=lambda c: 'You said: "hello again"' in content(c),
            timeout=60,
        )
