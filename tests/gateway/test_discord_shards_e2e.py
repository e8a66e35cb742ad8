"""Issue 19 §4's must-hold, end to end: two real `rawp gateway` processes, each running half of
four Discord shards (DISCORD_SHARD_COUNT=4, DISCORD_SHARD_IDS 0,1 and 2,3), against one fake
Discord with a guild on each shard, and a real master and client behind them.

Every guild is served, each by the replica holding its shard: the fake sends a guild's events
on its shard's connection only, and which process holds a connection is read from the
operating system (the connection's local port among the process's sockets). The slash commands
are registered once, by shard 0's replica.

With DISCORD_SHARD_IDS=auto and the machine's Redis, two replicas split the four shards, and
when one is SIGKILLed its shards move to the survivor, which then serves their guilds.
"""

from __future__ import annotations

import asyncio
import signal

import psutil

from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import content, discord_env, gateway_args, module_stack, sub
from tests.scale.conftest import REDIS_URL, redis_prefix  # noqa: F401 (a fixture)

SHARDS = 4
WORLD = DiscordWorld(max_concurrency=16)  # all four shards may identify at once
GUILDS = [WORLD.add_guild(f"guild {i}", shard=i, shard_count=SHARDS) for i in range(SHARDS)]
OWNER = f"discord:{WORLD.alice['id']}"

stack = module_stack("discord-shards", OWNER)


def local_ports(pid: int) -> set[int]:
    """The local TCP ports of a process's sockets."""
    return {c.laddr.port for c in psutil.Process(pid).net_connections(kind="tcp") if c.laddr}


def holders(fake: FakeDiscord, replicas: dict) -> dict[int, str]:
    """shard → the replica (key of `replicas`) whose process holds its open connection."""
    ports = {name: local_ports(proc.pid) for name, proc in replicas.items() if proc.poll() is None}
    held = {}
    for session in [s for s in fake.gateway.sessions if not s.ws.closed]:
        for name, mine in ports.items():
            if session.peer[1] in mine:
                held[session.shard[0]] = name
    return held


async def until(check, what: str, state, within: float = 90.0) -> None:
    """Poll `check()` until it holds; fail naming `what` and `state()` (a deadline for
    failing, not a timing claim)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        assert loop.time() < deadline, f"not within {within:.0f} s: {what}; now {state()}"
        await asyncio.sleep(0.2)


async def ask_nodes(fake: FakeDiscord, channel_id: str) -> str:
    command = await fake.inject_slash_command("rawp", sub("nodes"), channel_id=channel_id)
    webhook = f"/webhooks/{WORLD.application_id}/{command['token']}"
    return content(await fake.wait_for_call("POST", webhook, timeout=60))


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


async def test_auto_replicas_split_the_shards_and_a_killed_ones_move_to_the_survivor(
    stack,
    processes,
    tmp_path,
    redis_prefix,  # noqa: F811
):
    redis, prefix = redis_prefix
    async with FakeDiscord(WORLD) as fake:
        env = discord_env(
            fake,
            WORLD,
            DISCORD_SHARD_COUNT=str(SHARDS),
            DISCORD_SHARD_IDS="auto",
            RAWP_REDIS_URL=REDIS_URL,
            RAWP_GATEWAY_REDIS_PREFIX=prefix,
        )
        replicas = {
            name: processes.rawp(*gateway_args(stack, tmp_path / name), env=env)
            for name in ("a", "b")
        }
        await until(
            lambda: sorted(holders(fake, replicas).values()) == ["a", "a", "b", "b"],
            "the two replicas each run two of the four shards",
            lambda: holders(fake, replicas),
        )
        victim = holders(fake, replicas)[SHARDS - 1]
        survivor = "a" if victim == "b" else "b"
        moved = [shard for shard, name in holders(fake, replicas).items() if name == victim]
        replicas[victim].send_signal(signal.SIGKILL)
        replicas[victim].wait(timeout=30)

        await until(
            lambda: holders(fake, replicas) == dict.fromkeys(range(SHARDS), survivor),
            "the survivor runs every shard after the other was killed",
            lambda: holders(fake, replicas),
        )
        # Its leases name it for all four: it holds them all, so no restart is still to come.
        owners = await redis.mget([f"{prefix}shard:{i}" for i in range(SHARDS)])
        assert len(set(owners)) == 1 and None not in owners
        await until(
            lambda: holders(fake, replicas) == dict.fromkeys(range(SHARDS), survivor),
            "the survivor's connections are still all four",
            lambda: holders(fake, replicas),
        )
        for shard in moved:  # the dead replica's guilds are served again
            assert "test-box" in await ask_nodes(fake, GUILDS[shard][1])
