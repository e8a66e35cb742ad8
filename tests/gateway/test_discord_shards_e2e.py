"""Issue 19 §4's must-hold, end to end: two real `rawp gateway` processes, each running half of
four Discord shards (DISCORD_SHARD_COUNT=4, DISCORD_SHARD_IDS 0,1 and 2,3), against one fake
Discord with a guild on each shard, and a real master and client behind them.

Every guild is served, each by the replica holding its shard: the fake sends a guild's events
on its shard's connection only, and which process holds a connection is read from the
operating system (the connection's local port among the process's sockets). The slash commands
are registered once, by shard 0's replica.
"""

from __future__ import annotations

import psutil

from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import content, discord_env, gateway_args, module_stack, sub

SHARDS = 4
WORLD = DiscordWorld()
GUILDS = [WORLD.add_guild(f"guild {i}", shard=i, shard_count=SHARDS) for i in range(SHARDS)]
OWNER = f"discord:{WORLD.alice['id']}"

stack = module_stack("discord-shards", OWNER)


def local_ports(pid: int) -> set[int]:
    """The local TCP ports of a process's sockets."""
    return {c.laddr.port for c in psutil.Process(pid).net_connections(kind="tcp") if c.laddr}


async def test_two_replicas_each_running_half_of_four_shards_serve_every_guild(
    stack, processes, tmp_path
):
    async with FakeDiscord(WORLD) as fake:
        replicas = {
            ids: processes.rawp(
                *gateway_args(stack, tmp_path / f"shards-{ids}"),
                env=discord_env(
                    fake, WORLD, DISCORD_SHARD_COUNT=str(SHARDS), DISCORD_SHARD_IDS=ids
                ),
            )
            for ids in ("0,1", "2,3")
        }
        sessions = [await fake.gateway.wait_for_session(60, shard=i) for i in range(SHARDS)]
        await fake.wait_for_call("PUT", "/applications/*/commands", timeout=60)

        # Which process holds each shard's connection, by the connection's port.
        ports = {ids: local_ports(proc.pid) for ids, proc in replicas.items()}
        holder = [next(ids for ids, mine in ports.items() if s.peer[1] in mine) for s in sessions]
        assert holder == ["0,1", "0,1", "2,3", "2,3"]

        for shard, (_, channel_id) in enumerate(GUILDS):
            command = await fake.inject_slash_command("rawp", sub("nodes"), channel_id=channel_id)
            webhook = f"/webhooks/{WORLD.application_id}/{command['token']}"
            answer = await fake.wait_for_call("POST", webhook, timeout=60)
            assert "test-box" in content(answer)  # the master's answer: the guild is served
            # It reached only the connection of the guild's shard, held by that replica.
            delivered = [
                i
                for i, session in enumerate(sessions)
                if any(data.get("id") == command["id"] for _, data in session.received)
            ]
            assert delivered == [shard]

        # Registered once, by the replica running shard 0 (the other never syncs).
        assert len(fake.calls("PUT", "/applications/*/commands")) == 1
        for proc in replicas.values():
            proc.terminate()
            assert proc.wait(timeout=30) == 0
