"""Busy is visible through Discord (issue 16 §5): a real master and client (the demo agent), the
real `rawp gateway` process against the fake Discord. A first prompt waits on an approval, so
its turn runs for as long as the test needs; messages sent meanwhile are marked 🕒 with one
"queued (n)" line, and after `/rawp busy interrupt` a message stops the turn instead."""

from __future__ import annotations

from gateway.sessions.busy import queue_line
from tests.fakes.discord_payloads import DiscordWorld, command_option
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import (
    buttons,
    content,
    discord_ready,
    discord_start,
    module_stack,
    start_discord_gateway,
    sub,
)

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"


stack = module_stack("busy-discord", OWNER)


async def test_queued_messages_are_marked_and_interrupt_stops_the_turn(stack, processes, tmp_path):
    async with FakeDiscord(WORLD) as fake:
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await discord_ready(fake)
        _, thread_id = await discord_start(fake)
        posts = f"/channels/{thread_id}/messages"

        def reaction(message: dict, emoji: str) -> str:
            return f"{posts}/{message['id']}/reactions/{emoji}/@me"

        async def said(text: str):
            return await fake.wait_for_call(
                "POST", posts, where=lambda c: f'You said: "{text}"' in content(c), timeout=60
            )

        # The first turn waits on its approval; two more messages wait behind it.
        first = await fake.inject_message("please approve this", channel_id=thread_id)
        question = await fake.wait_for_call(
            "POST", posts, where=lambda c: "Apply the change" in content(c), timeout=60
        )
        second = await fake.inject_message("second", channel_id=thread_id)
        await fake.wait_for_call("PUT", reaction(second, "🕒"), timeout=30)
        line = await fake.wait_for_call(
            "POST", posts, where=lambda c: "🕒 queued (1)" in content(c), timeout=30
        )
        third = await fake.inject_message("third", channel_id=thread_id)
        await fake.wait_for_call("PUT", reaction(third, "🕒"), timeout=30)
        line_path = f"{posts}/{line.response['id']}"
        await fake.wait_for_call(
            "PATCH", line_path, where=lambda c: "🕒 queued (2)" in content(c), timeout=30
        )
        assert not fake.calls("PUT", reaction(second, "⏳"))  # still waiting

        # Approving ends the first turn; the others run in order, their 🕒 and the line go.
        allow = next(b for b in buttons(question) if b.get("label") == "Allow once")
        await fake.inject_button(allow["custom_id"], message=question.response)
        for message in (first, second, third):
            await fake.wait_for_call("PUT", reaction(message, "✅"), timeout=60)
        for message in (second, third):
            await fake.wait_for_call("DELETE", reaction(message, "🕒"), timeout=10)
        await fake.wait_for_call("DELETE", line_path, timeout=10)
        answers = [await said(t) for t in ("please approve this", "second", "third")]
        assert [a.response["id"] for a in answers] == sorted(
            (a.response["id"] for a in answers), key=int
        )
        # The line counted down as the second one started, before the third did.
        edits = [content(c) for c in fake.calls("PATCH", line_path)]
        assert edits == [queue_line(2), queue_line(1)]

        # /rawp busy interrupt in the channel applies to its threads: a message stops the turn.
        command = await fake.inject_slash_command(
            "rawp", sub("busy", command_option("mode", "interrupt"))
        )
        webhook = f"/webhooks/{WORLD.application_id}/{command['token']}"
        answer = await fake.wait_for_call("POST", webhook, timeout=30)
        assert "now `interrupt`" in content(answer)
        waiting = await fake.inject_message("please approve again", channel_id=thread_id)
        await fake.wait_for_call(
            "POST",
            posts,
            where=lambda c: "Apply the change" in content(c) and c.response != question.response,
            timeout=60,
        )
        instead = await fake.inject_message("do this instead", channel_id=thread_id)
        await fake.wait_for_call("PUT", reaction(waiting, "⏹"), timeout=60)
        await said("do this instead")
        await fake.wait_for_call("PUT", reaction(instead, "✅"), timeout=60)
        assert not fake.calls("PUT", reaction(waiting, "✅"))
