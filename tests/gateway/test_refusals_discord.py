"""A message too long to be one prompt, in a Discord session thread (issue 28 §3): the real
`rawp gateway` against the fake Discord, a real master and client (the demo agent). The
gateway refuses it before sending anything and says the limit; it never counts as waiting, so
the next message runs at once, unmarked."""

from __future__ import annotations

from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import (
    content,
    discord_ready,
    discord_start,
    module_stack,
    start_discord_gateway,
)

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"

stack = module_stack("refusals-discord", OWNER)


async def test_a_two_megabyte_message_is_refused_with_the_limit_and_never_waits(
    stack, processes, tmp_path
):
    async with FakeDiscord(WORLD) as fake:
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await discord_ready(fake)
        _, thread_id = await discord_start(fake)
        posts = f"/channels/{thread_id}/messages"

        huge = await fake.inject_message("x" * 2_000_000, channel_id=thread_id)
        refusal = await fake.wait_for_call(
            "POST", posts, where=lambda c: "too long" in content(c), timeout=60
        )
        assert content(refusal) == (
            "⚠️ this message is too long to send: a prompt may be at most 1.0 MB "
            "(1,048,576 bytes), and this one is 1.9 MB. Shorten it or send it in parts."
        )
        assert str(refusal.body["message_reference"]["message_id"]) == huge["id"]

        after = await fake.inject_message("hello after", channel_id=thread_id)
        await fake.wait_for_call("PUT", f"{posts}/{after['id']}/reactions/✅/@me", timeout=60)
        assert not fake.calls("PUT", f"{posts}/{after['id']}/reactions/🕒/@me")
        said = [content(c) for c in fake.calls("POST", posts)]
        assert not any("queued" in text for text in said)
        assert not any("FRAME_TOO_LARGE" in text for text in said)
        assert not fake.calls("PUT", f"{posts}/{huge['id']}/reactions/⏳/@me")
