"""`/rawp worktree` and `/rawp start … worktree:true` through Discord (issue 30 §3): the real
`rawp gateway` process against the fake Discord, a real master and client, a real repository.

The session's agent writes in its own worktree, never in the workspace; only the owner (or an
approver) diffs, merges or discards it; the diff is posted in the thread; merge brings the
change into the workspace's branch and ends the session; discard leaves nothing behind."""

from __future__ import annotations

import asyncio
import re

from tests.client.test_worktrees import rawp_branches
from tests.fakes.discord_payloads import DiscordWorld, command_option
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import content, discord_ready, start_discord_gateway, sub
from tests.gateway.worktrees_support import worktree_of, worktree_stack_fixture

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"
BOOLEAN = 5

stack = worktree_stack_fixture(OWNER)


async def command(fake: FakeDiscord, where: str, name: str, *options, user=None) -> str:
    """`/rawp <name> …` in `where`: the private reply's text."""
    sent = await fake.inject_slash_command(
        "rawp", sub(name, *options), channel_id=where, user_payload=user or WORLD.alice
    )
    webhook = f"/webhooks/{WORLD.application_id}/{sent['token']}"
    return content(await fake.wait_for_call("POST", webhook, timeout=60))


async def start_in_worktree(fake: FakeDiscord, count: int) -> tuple[str, str]:
    """`/rawp start test-box writer worktree:true`: (the thread's id, the session id)."""
    options = (
        command_option("node", "test-box"),
        command_option("agent", "writer"),
        command_option("worktree", True, option_type=BOOLEAN),
    )
    reply = await command(fake, WORLD.channel_id, "start", *options)
    assert "own git worktree" in reply, reply
    made = await fake.wait_for_call("POST", "/channels/*/threads", count=count, timeout=60)
    session_id = re.search(r"session `([0-9a-f-]+)`", reply).group(1)
    return made.response["id"], session_id


async def test_a_worktree_session_is_diffed_merged_and_discarded_from_discord(
    stack, processes, tmp_path
):
    repo = stack.root
    async with FakeDiscord(WORLD) as fake:
        gateway = start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await discord_ready(fake)
        thread_id, session_id = await start_in_worktree(fake, 1)
        posts = f"/channels/{thread_id}/messages"
        await fake.inject_message("changed shared.txt", channel_id=thread_id)
        await fake.wait_for_call("POST", posts, where=lambda c: "wrote" in content(c), timeout=90)
        worktree = worktree_of(repo, session_id)
        assert (worktree / "shared.txt").read_text() == "changed\n"
        assert (repo / "shared.txt").read_text() == "base\n"  # the workspace is untouched

        refused = await command(fake, thread_id, "worktree", command_option("action", "merge"),
                                user=WORLD.bob)  # fmt: skip
        assert refused.startswith("Only this session's owner or an approver")
        said = await command(fake, thread_id, "worktree", command_option("action", "diff"))
        assert said == "Posted the diff in the thread."
        diff = await fake.wait_for_call("POST", posts, where=lambda c: "```diff" in content(c))
        assert "+changed" in content(diff) and "-base" in content(diff)

        # Restart safety: a restarted gateway still finds the thread's session and its owner.
        gateway.terminate()
        await asyncio.to_thread(gateway.wait, 30)
        identified = len(fake.calls("WS", "IDENTIFY"))
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await fake.wait_for_call("WS", "IDENTIFY", count=identified + 1, timeout=60)
        await fake.wait_for_ready_client(timeout=60)

        said = await command(fake, thread_id, "worktree", command_option("action", "merge"))
        assert said.startswith("✅ Merged `rawp/") and "into `main`" in said, said
        assert (repo / "shared.txt").read_text() == "changed\n"
        assert not await asyncio.to_thread(worktree.exists)
        again = await command(fake, thread_id, "worktree", command_option("action", "diff"))
        assert "NO_WORKTREE" in again

        second_thread, second = await start_in_worktree(fake, 2)
        await fake.inject_message("scratch notes.txt", channel_id=second_thread)
        await fake.wait_for_call(
            "POST", f"/channels/{second_thread}/messages", where=lambda c: "wrote" in content(c),
            timeout=90,
        )  # fmt: skip
        said = await command(fake, second_thread, "worktree", command_option("action", "discard"))
        assert said.startswith("🗑 Discarded the worktree"), said
        assert not await asyncio.to_thread(worktree_of(repo, second).exists)
        assert rawp_branches(repo) == "" and not (repo / "notes.txt").exists()


async def test_a_mention_with_worktree_starts_in_a_worktree(stack, processes, tmp_path):
    repo = stack.root
    async with FakeDiscord(WORLD) as fake:
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD, "--agents", "writer")
        await discord_ready(fake)
        mention = await fake.inject_mention("--worktree mentioned m.txt")
        made = await fake.wait_for_call(
            "POST", f"/channels/{WORLD.channel_id}/messages/{mention['id']}/threads", timeout=60
        )
        posts = f"/channels/{made.response['id']}/messages"
        greeting = await fake.wait_for_call(
            "POST", posts, where=lambda c: "own git worktree" in content(c), timeout=60
        )
        await fake.wait_for_call("POST", posts, where=lambda c: "wrote" in content(c), timeout=90)
        session_id = re.search(r"session `([0-9a-f-]+)`", content(greeting)).group(1)
        # The flag left the prompt: the agent got "mentioned m.txt" and wrote in its worktree.
        assert (worktree_of(repo, session_id) / "m.txt").read_text() == "mentioned\n"
        assert not (repo / "m.txt").exists()
