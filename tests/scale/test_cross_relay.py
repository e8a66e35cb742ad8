"""The cross-replica relay (issue 9, docs/scale-out.md), with real processes on loopback: three
`rawp master` replicas A, B, C on the machine's PostgreSQL and Redis, and a real client paired
through A. A session is created on A, so A holds its client link; its edges sit on B and C, so
every frame they see has crossed Redis."""

from __future__ import annotations

import asyncio

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.edge.stack import frame, push_tighter_limits, recv, recv_until
from tests.scale.cluster import cluster

END = "session.turn.end"
GREETING_AND_HISTORY = ("session.capabilities", "tool.catalog.publish", "session.history")
A, B, C = 0, 1, 2


def prompt(session_id: str, lines: int, pause: float = 0.0) -> str:
    """A prompt for the counter agent (tests/scale/cluster.py): `lines` numbered deltas."""
    text = f"count {lines} {pause}"
    return frame("control.prompt.request", {"prompt_text": text}, session_id=session_id)


def numbered(count: int) -> list[str]:
    return [f"line {n:04d}\n" for n in range(count)]


def deltas(frames: list[dict]) -> list[str]:
    return [f["payload"]["text"] for f in frames if f["type"] == "agent.text.delta"]


def ids(frames: list[dict]) -> list[str]:
    return [f["message_id"] for f in frames]


async def closed(ws, wait: float = 30) -> int:
    """Read until the master closes the socket; its close code."""
    async with asyncio.timeout(wait):
        try:
            while True:
                await ws.recv()
        except ConnectionClosed:
            return ws.close_code


async def test_a_turn_prompted_on_b_is_seen_identically_on_b_and_c(
    processes, tmp_path, pg_url, redis_prefix
):
    _, prefix = redis_prefix
    async with cluster(processes, tmp_path, pg_url, prefix) as made:
        sid, _ = await made.create_session()
        on_b, on_c = await made.attach(sid, B), await made.attach(sid, C)

        await on_b.send(prompt(sid, 30))
        seen_b, seen_c = await asyncio.gather(recv_until(on_b, END), recv_until(on_c, END))

        assert ids(seen_b) == ids(seen_c)  # same frames, same order
        assert seen_b == seen_c  # and the same bytes' worth of content
        assert len(set(ids(seen_b))) == len(seen_b)  # no message_id twice
        assert seen_b[0]["type"] == "session.turn.start"
        assert deltas(seen_b) == numbered(30)
        assert seen_b[-1]["payload"]["stop_reason"] == "end_turn"
        assert {f["session_id"] for f in seen_b} == {sid}


async def test_a_ticket_used_on_b_is_refused_on_c_and_on_b_again(
    processes, tmp_path, pg_url, redis_prefix
):
    _, prefix = redis_prefix
    async with cluster(processes, tmp_path, pg_url, prefix) as made:
        sid, _ = await made.create_session()
        ticket = await made.ticket(sid, C)  # issued by C, burnt on B
        ws = await asyncio.wait_for(made.on(B).connect(sid, ticket), 30)
        made.edge.sockets.append(ws)
        assert (await recv(ws))["type"] == "session.capabilities"  # B admitted it

        for index in (C, B):
            with pytest.raises(InvalidStatus) as refused:
                await asyncio.wait_for(made.on(index).connect(sid, ticket), 30)
            assert refused.value.response.status_code == 401
            assert b"INVALID_TICKET" in refused.value.response.body


async def test_a_limits_change_sent_to_a_reaches_edge_sockets_on_b_and_c(
    processes, tmp_path, pg_url, redis_prefix
):
    _, prefix = redis_prefix
    async with cluster(processes, tmp_path, pg_url, prefix) as made:
        sid, _ = await made.create_session()
        sockets = [await made.attach(sid, B), await made.attach(sid, C)]
        status, nodes = await made.edge.call("GET", "/v1/edge/nodes")
        assert status == 200, nodes
        versions = nodes["nodes"][0]["config_versions"]

        # The client's own code PUTs new limits (§4.1.5) to the master it paired with:
        # replica A, where no edge socket is.
        pushed_to, version = await push_tighter_limits(made.client_state, made.workspace, versions)
        assert pushed_to == made.replicas.urls[A]

        pushed = [await recv(ws) for ws in sockets]
        for notice in pushed:
            assert notice["type"] == "node.config.changed"
            assert notice["payload"] == {
                "node_id": made.node_id,
                "changed_scope": "limits",
                "config_version": version,
                "reason": "test: tighter limits",
            }
        assert pushed[0]["message_id"] == pushed[1]["message_id"]  # one notice


async def test_a_turn_survives_the_death_of_the_replica_holding_the_client(
    processes, tmp_path, pg_url, redis_prefix
):
    _, prefix = redis_prefix
    async with cluster(processes, tmp_path, pg_url, prefix) as made:
        sid, _ = await made.create_session()
        on_b, on_c = await made.attach(sid, B), await made.attach(sid, C)
        on_a = await made.attach(sid, A)  # dies with A, and reconnects to C (below)
        # 200 deltas 50 ms apart: a 10 s turn, A dies ~1 s in; the takeover (lease 5 s plus
        # a sweep of 2 s) lands while the agent is still writing, so the rest of the turn
        # arrives partly from the client's replay and partly live.
        await on_b.send(prompt(sid, 200, 0.05))

        async def read(ws, kill_at: str | None = None) -> tuple[list[dict], int | None]:
            seen, killed_after = [], None
            while not seen or seen[-1]["type"] != END:
                seen.append(await recv(ws, wait=60))
                if kill_at is not None and deltas(seen[-1:]) == [kill_at]:
                    made.replicas.procs[A].kill()  # SIGKILL: no lease released, nothing said
                    killed_after = len(seen)
            return seen, killed_after

        async def read_a_then_reconnect_on_c() -> list[dict]:
            """An edge on A: cut off by the kill, back on C with a new ticket (A-22) and the
            last message_id it saw; C replays the rest from Redis, then it goes on live."""
            before = []
            with pytest.raises(ConnectionClosed):
                while True:
                    before.append(await recv(on_a, wait=60))
            ticket = await made.ticket(sid, C)
            again = await made.on(C).connect(sid, ticket, last_message_id=before[-1]["message_id"])
            made.edge.sockets.append(again)
            after = []
            while not after or after[-1]["type"] != END:
                after.append(await recv(again, wait=60))
            return before + [f for f in after if f["type"] not in GREETING_AND_HISTORY]

        async with asyncio.timeout(60):
            (seen_b, killed_after), (seen_c, _), seen_a = await asyncio.gather(
                read(on_b, kill_at="line 0020\n"), read(on_c), read_a_then_reconnect_on_c()
            )
        assert made.replicas.procs[A].wait(timeout=5) == -9
        assert killed_after is not None and len(deltas(seen_b[killed_after:])) > 100  # mid-turn

        for seen in (seen_b, seen_c):
            assert deltas(seen) == numbered(200)  # every number once, in order: none lost
            assert len(set(ids(seen))) == len(seen)  # no message_id repeated
            assert seen[-1]["payload"]["stop_reason"] == "end_turn"
        assert ids(seen_b) == ids(seen_c)
        assert deltas(seen_a) == numbered(200) and len(set(ids(seen_a))) == len(seen_a)

        # The replica that took the session over carries edge frames to the client too.
        await on_c.send(prompt(sid, 3))
        after_b, after_c = await asyncio.gather(recv_until(on_b, END), recv_until(on_c, END))
        assert deltas(after_b) == deltas(after_c) == numbered(3)
        assert ids(after_b) == ids(after_c)
        assert not set(ids(after_b)) & set(ids(seen_b))


async def test_deleting_the_session_on_c_closes_its_edge_sockets_on_b(
    processes, tmp_path, pg_url, redis_prefix
):
    _, prefix = redis_prefix
    async with cluster(processes, tmp_path, pg_url, prefix) as made:
        sid, _ = await made.create_session()
        on_b = [await made.attach(sid, B), await made.attach(sid, B)]

        status, _ = await made.on(C).call("DELETE", f"/v1/edge/sessions/{sid}")
        assert status == 204

        assert [await closed(ws) for ws in on_b] == [1000, 1000]
        status, listed = await made.on(B).call("GET", f"/v1/edge/sessions?node_id={made.node_id}")
        assert status == 200
        assert sid not in {s["session_id"] for s in listed["sessions"]}  # TERMINATED: not listed


async def test_unregistering_the_node_on_a_ends_its_session_held_by_b(
    processes, tmp_path, pg_url, redis_prefix
):
    import aiohttp

    from client.state import StateDir

    _, prefix = redis_prefix
    async with cluster(processes, tmp_path, pg_url, prefix) as made:
        body = {"agent_name": "counter", "workspace_path": str(made.workspace)}
        status, created = await made.on(B).call(
            "POST", f"/v1/edge/nodes/{made.node_id}/sessions", body
        )
        assert status == 201, created  # created on B: B holds the client link
        sid = created["session_id"]
        on_c = await made.attach(sid, C)

        # §3.5: the client unregisters itself at the master it paired with, replica A, which
        # holds no socket of the session; B ends it and C's edge socket closes.
        token = StateDir.open(made.client_state).credentials.access_token
        async with aiohttp.ClientSession() as http:
            url = f"{made.replicas.urls[A]}/v1/nodes/self"
            async with http.delete(url, headers={"Authorization": f"Bearer {token}"}) as answer:
                assert answer.status == 204
        assert await closed(on_c) == 1001
        for index in (B, C):
            status, listed = await made.on(index).call("GET", "/v1/edge/sessions")
            assert status == 200 and sid not in {s["session_id"] for s in listed["sessions"]}


async def statuses_during(made, session_id: str, turn) -> tuple[list[dict], set[str]]:
    """Runs `turn` (a coroutine answering a turn's frames) while polling the session's status
    on every live replica; the frames and every status seen. A tug-of-war over the client's
    socket shows as DETACHED (each side writes it when the other takes the socket)."""
    seen: set[str] = set()
    over = asyncio.Event()

    async def poll() -> None:
        while not over.is_set():
            for index, proc in enumerate(made.replicas.procs):
                if proc.poll() is None:
                    status, listed = await made.on(index).call(
                        "GET", f"/v1/edge/sessions?node_id={made.node_id}"
                    )
                    if status == 200:
                        seen.update(
                            s["status"] for s in listed["sessions"] if s["session_id"] == session_id
                        )
            await asyncio.sleep(0.05)  # a polling interval while the turn runs

    async def run_turn() -> list[dict]:
        try:
            return await turn
        finally:
            over.set()

    async with asyncio.TaskGroup() as group:
        group.create_task(poll())
        frames = group.create_task(run_turn())
    return frames.result(), seen


async def lease_holder(redis, prefix: str, session_id: str) -> str | None:
    held = await redis.get(f"{prefix}own:{{{session_id}}}")
    return held.decode() if held else None


async def test_a_replica_whose_session_was_taken_over_lets_go_instead_of_taking_it_back(
    processes, tmp_path, pg_url, redis_prefix
):
    """client_link rule 6: the new holder's reattach takes the client's socket from the old
    one; the old one, finding the lease another's, must not reattach in turn (a tug-of-war)."""
    import re

    redis, prefix = redis_prefix
    async with cluster(processes, tmp_path, pg_url, prefix, count=2) as made:
        sid, _ = await made.create_session()  # A holds it
        b_id = re.search(r"as replica ([0-9a-f]+)", made.replicas.logs[B].read_text()).group(1)
        # The lease passes to B (as if A had stalled past it); B learns it holds the session
        # when an edge arrives there, and reattaches — the client drops A's socket.
        await redis.set(f"{prefix}own:{{{sid}}}", b_id, px=5000)
        on_b = await made.attach(sid, B)
        # A whole turn prompted on B means B's link to the client is up (what an edge sends
        # before it is goes out after the reattach).
        await on_b.send(prompt(sid, 5))
        assert deltas(await recv_until(on_b, END)) == numbered(5)

        # Were A to reattach in turn, the client would drop B's socket, B would reattach…:
        # the session would go DETACHED and back, and a turn would lose or repeat lines. A
        # 3 s turn spans many rounds of such a fight (reattach backoff starts at 0.1 s).
        await on_b.send(prompt(sid, 60, 0.05))
        turn, statuses = await statuses_during(made, sid, recv_until(on_b, END))
        assert deltas(turn) == numbered(60) and len(set(ids(turn))) == len(turn)
        assert statuses == {"RUNNING"}, statuses
        assert await lease_holder(redis, prefix, sid) == b_id  # B renewed it all along


async def test_a_replica_cut_off_from_redis_lets_its_sessions_go_to_another(
    processes, tmp_path, pg_url, redis_prefix
):
    """A loses Redis for good (a partition): its leases expire for the others, B takes the
    session over, and A — unable to renew — lets go instead of contesting the client's
    socket; the edge on B gets whole turns from B."""
    import re

    from tests.edge.proxy import CuttableProxy
    from tests.scale.conftest import REDIS_URL

    redis, prefix = redis_prefix
    redis_port = int(re.search(r":(\d+)", REDIS_URL.split("//", 1)[1]).group(1))
    proxy = CuttableProxy(redis_port)
    a_redis = f"redis://127.0.0.1:{proxy.port}/0"
    try:
        async with cluster(
            processes, tmp_path, pg_url, prefix, count=2, redis_urls={A: a_redis}
        ) as made:
            sid, _ = await made.create_session()  # A holds it
            b_id = re.search(r"as replica ([0-9a-f]+)", made.replicas.logs[B].read_text())[1]
            on_b = await made.attach(sid, B)
            await on_b.send(prompt(sid, 3))
            assert deltas(await recv_until(on_b, END)) == numbered(3)  # A → Redis → B works

            on_a = await made.attach(sid, A)
            proxy.partition()
            # A cannot claim the control frame's id in Redis: the edge is told, and its socket
            # stays open (a second frame gets its own answer).
            for _ in range(2):
                await on_a.send(prompt(sid, 1))
                refused = await recv_until(on_a, "session.error", wait=30)
                assert refused[-1]["payload"]["code"] == "CLIENT_UNAVAILABLE"
            # A's lease expires (5 s) and B's sweep (every 2 s) takes the session over.
            async with asyncio.timeout(30):
                while True:
                    if await lease_holder(redis, prefix, sid) == b_id:
                        break
                    await asyncio.sleep(0.05)  # a polling interval: the lease is Redis state
            await on_b.send(prompt(sid, 4))
            assert deltas(await recv_until(on_b, END, wait=30)) == numbered(4)
            # A, still cut off, must not contest the client's socket: a long turn on B keeps
            # every line, once, in order, and the session never goes DETACHED meanwhile.
            await on_b.send(prompt(sid, 60, 0.05))
            turn, statuses = await statuses_during(made, sid, recv_until(on_b, END))
            assert deltas(turn) == numbered(60) and len(set(ids(turn))) == len(turn)
            assert statuses == {"RUNNING"}, statuses
            assert await lease_holder(redis, prefix, sid) == b_id
    finally:
        proxy.close()
