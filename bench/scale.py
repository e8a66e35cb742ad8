"""Sessions at scale (issue 7 §2): `.venv/bin/python bench/scale.py`.

One real master process on loopback (`--dev`) and a load generator in two processes:

- **the client side**: this file run with `--play-client PORT`, a wire-level local client
  (aiohttp, the calls the master makes: health, agents, `session/init`, the data-plane
  WebSocket), paired through `POST /v1/auth/pair` with both config scopes synced. A prompt on a
  session makes it stream `agent.text.delta` frames at a fixed rate, each stamped with the
  system-wide monotonic clock;
- **the edge side**: this process, one edge user, one master edge WebSocket per session.

N sessions (1,000; `--sessions 10000` for issue 20 §3) are opened; a tenth of them get a prompt
and stream at 20 frames/s for a fixed time. Figures: the master's RSS (idle, before the
sessions, sampled while opening, with them open, at the peak while streaming), memory per idle
session, per-frame latency p50 / p99 at the edge, frames lost (sent − received) and repeated.
Targets: RSS ≤ 300 MB at 1,000 sessions and ≤ 1 GB at 10,000, p99 ≤ 50 ms, zero lost or
repeated frames. Baselines in the same run: the master's RSS before any session, and, once the
master has stopped, the floor under its CPU per frame — a bare asyncio forwarder
(bench/forwarder.py) relaying as many sockets at the same rate and frame size (`--no-floor`
skips it). The master's CPU is split into its own (user) and the kernel's (system) time.

The edge user's Edge API budget (30/s by default) is raised for this one user only, with the
master's `--edge-user-rate-limits`; sessions are opened `--parallel` at a time.

File descriptors: the master holds two sockets per session (the edge's and its link to the
client), so it needs more than 2 × N descriptors. The bench raises its soft limit to the hard
limit (the children inherit it); when even that is too few, the sessions are all opened but
only as many edge sockets as fit are attached (`edges` in the figures), the rest idle
without one, as a session whose chat user went away is.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import os
import random
import resource
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from urllib.parse import parse_qs, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import forwarder
import orjson
import psutil
from aiohttp import WSMsgType, web
from relay import EDGE_SECRET, percentile
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from master.edge.relay.replay_ring import SESSION_BYTES
from rawp.clock import SYSTEM_CLOCK, iso
from rawp.frames import dump_frame, make_frame
from tests.support import Processes, free_port, wait_for_http

SESSIONS = 1_000
LARGE = 10_000  # issue 20 §3's figure, its own row in docs/benchmarks.md
STREAMING_SHARE = 0.10
RATE = 20
SECONDS = 10.0
LIMIT = 120.0  # seconds any phase may take before the bench gives up
PARALLEL = 8  # sessions opened at once
FRAME_BYTES = 245  # about the size of an unpadded delta frame
IDLE_S = 10.0  # seconds the master's CPU is measured with every session open and silent
STOP_LIMIT = 30.0  # seconds the master is given to exit after SIGTERM before it counts as hung
SUBJECT = "bench:scale"
FD_RESERVE = 200  # the master's descriptors besides its sockets: listener, database, pipes
# `--latency-trace`: (sent, arrived) of every frame, for the slowest seconds of the run
LATENCY_TRACE: list[tuple[int, int]] | None = None
PHASES = {False: "at random phases", True: "in step (--aligned)"}
PROMPTS = {False: "at random moments of the first period", True: "all at once"}
SAMPLES = 20  # RSS samples while opening (the RSS-vs-sessions curve)


def raise_fd_limit() -> int:
    """Raise this process's soft descriptor limit to the hard one (children inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    return soft


def edges_that_fit(sessions: int, fd_limit: int) -> int:
    """Edge sockets the master can hold beside `sessions` client links (see the docstring)."""
    return max(0, min(sessions, fd_limit - sessions - FD_RESERVE))


# ---- the client side (its own process) ----


def serve_client(port: int) -> None:
    sockets: dict[str, web.WebSocketResponse] = {}
    tickets: dict[str, str] = {}
    stream_numbers = itertools.count()
    stamp = [0, ""]

    def now_iso() -> str:
        second = int(time.time())
        if stamp[0] != second:
            stamp[:] = [second, iso(SYSTEM_CLOCK.now())]
        return stamp[1]

    async def health(request):
        return web.json_response({"status": "online", "uptime": 1, "active_sessions": 0})

    async def agents(request):
        return web.json_response({"agents": [{"id": "demo", "name": "demo", "is_active": True}]})

    async def init(request):
        body = await request.json()
        tickets[body["session_id"]] = body["ticket"]
        return web.json_response({"session_id": body["session_id"], "status": "INIT"}, status=201)

    async def delete(request):
        ws = sockets.pop(request.match_info["session_id"], None)
        if ws is not None:
            await ws.close()
        return web.Response(status=204)

    async def stream(rate: int, count: int, sid: str, ws, aligned: int, pad: int) -> None:
        # The frame's text is filled into a template made once: building each frame through
        # the models took the generator more CPU than the master spent relaying it, and the
        # generator shares the master's two cores. Each id is a distinct UUID (the master
        # drops a repeated one); the timestamp is this second's.
        made = make_frame("agent.text.delta", {"content_index": 0, "text": "TEXT"}, session_id=sid)
        head, rest = dump_frame(made).split(made.message_id)
        middle, rest = rest.split(made.timestamp)
        tail_start, tail_end = rest.split('"TEXT"')
        padding = " " + "x" * pad if pad else ""  # `--frame-bytes`: a bigger frame
        number = next(stream_numbers)
        # Independent sessions are not in step: each starts at a random point of its period.
        # `--aligned` starts them all at once (the prompts go out within a fraction of a
        # second), so every period begins with a burst of one frame from each session.
        start = time.monotonic() + (0 if aligned else random.random() / rate)
        for i in range(count):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await ws.send_str(
                f"{head}{number:08x}-0000-4000-8000-{i:012x}{middle}{now_iso()}"
                f'{tail_start}"{i} {time.monotonic_ns()}{padding}"{tail_end}'
            )

    async def socket(request):
        sid = request.query.get("session_id", "")
        if tickets.pop(sid, None) != request.query.get("ticket"):
            return web.json_response({"error_code": "INVALID_TICKET", "message": "x"}, status=401)
        ws = web.WebSocketResponse(protocols=("rawp-dps-1.0", "rawp-1.0"), max_msg_size=0)
        await ws.prepare(request)
        sockets[sid] = ws
        for type, payload in (
            ("session.capabilities", {"protocol": "rawp-dps-1.0"}),
            ("tool.catalog.publish", {"tools": []}),
        ):
            await ws.send_str(dump_frame(make_frame(type, payload, session_id=sid)))
        tasks = set()
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                data = orjson.loads(message.data)
                if data["type"] == "control.prompt.request":
                    if gc.isenabled():  # the first prompt: the sessions are open
                        quiet_collector()  # as in the edges' process
                    rate, count, aligned, pad = (
                        int(x) for x in data["payload"]["prompt_text"].split()
                    )
                    task = asyncio.create_task(stream(rate, count, sid, ws, aligned, pad))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                    task.add_done_callback(said_failure)  # to client.log, once
        return ws

    app = web.Application()
    app.router.add_get("/v1/health", health)
    app.router.add_get("/v1/agents", agents)
    app.router.add_post("/v1/session/init", init)
    app.router.add_delete("/v1/session/{session_id}", delete)
    app.router.add_get("/v1/ws/stream", socket)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


# ---- the master under tracemalloc (`--trace-memory FILE`) ----

# Run as the master's program: SIGUSR1 writes the biggest allocation sites, by file, to FILE.
TRACED_MASTER = r"""
import collections, os, signal, sys, tracemalloc
ROOT = os.getcwd() + os.sep
# Depth 1 traces from the start; a deeper traceback (BENCH_TRACE_DEPTH) would make the imports
# crawl, so it starts at the mark and traces only what the sessions allocate.
DEPTH = int(os.environ.get("BENCH_TRACE_DEPTH", "1"))
if DEPTH == 1:
    tracemalloc.start(1)
before = []
def ours(frame):
    return frame.filename.startswith(ROOT) and ".venv" not in frame.filename
def mark(*_):
    if DEPTH > 1:
        tracemalloc.start(DEPTH)
    else:
        before[:] = [tracemalloc.take_snapshot()]
def dump(*_):
    snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()  # the rest runs untraced, and so does the streaming phase after it
    total = sum(stat.size for stat in snapshot.statistics("filename"))
    with open(sys.argv[1], "w") as out:
        out.write(f"traced: {total / 2**20:.1f} MiB\n\ngrowth since the sessions began:\n")
        grown = snapshot.statistics("lineno")
        if before:
            grown = snapshot.compare_to(before[0], "lineno")
        out.write("\n".join(str(line) for line in grown[:30]))
        if DEPTH > 1:
            # Each allocation charged to the innermost line of the project's code behind it.
            sizes = collections.Counter()
            for trace in snapshot.traces:
                frames = list(trace.traceback)[::-1]  # innermost first
                site = next((f for f in frames if ours(f)), frames[0])
                sizes[f"{site.filename.removeprefix(ROOT)}:{site.lineno}"] += trace.size
            out.write("\n\ngrowth charged to the project's innermost line:\n")
            out.write("\n".join(f"{k}: {v / 1024:.0f} KiB" for k, v in sizes.most_common(30)))
        out.write("\n")
signal.signal(signal.SIGUSR2, mark)
signal.signal(signal.SIGUSR1, dump)
from rawp_app.cli import main
sys.exit(main(sys.argv[2:]))
"""


# ---- the edge side (this process) ----


async def call(http, method: str, url: str, token: str, body=None) -> tuple[int, dict]:
    """One HTTP call; a 429 is waited out (Retry-After), boundedly."""
    for _ in range(200):
        async with http.request(
            method, url, json=body, headers={"Authorization": f"Bearer {token}"}
        ) as response:
            raw = await response.read()
            if response.status != 429:
                return response.status, (orjson.loads(raw) if raw else {})
            wait = float(response.headers.get("Retry-After", "0.1"))
        await asyncio.sleep(min(2.0, max(0.05, wait)))
    raise RuntimeError(f"{url}: the rate limit never let up")


async def pair(http, master: str, client: str, edge_token: str) -> str:
    status, made = await call(http, "POST", f"{master}/v1/edge/pairing-urls", edge_token)
    if status != 201:
        raise RuntimeError(f"pairing url: {status} {made}")
    token = parse_qs(urlparse(made["pairing_url"]).query)["token"][0]
    body = {
        "pairing_token": token,
        "client_address": client,
        "device_name": "load-generator",
        "client_credentials": {
            "access_token": "client-access",
            "refresh_token": "client-refresh",
            "expires_in": 3600,
        },
    }
    async with http.post(f"{master}/v1/auth/pair", json=body) as response:
        node = await response.json()
        if response.status != 200:
            raise RuntimeError(f"pair: {response.status} {node}")
    now = iso(time_now())
    scopes = {
        "limits": {
            "config_version": 1,
            "effective_at": now,
            "limits": {
                "rate_limit": 100_000,
                "max_frame_size": 65536,
                "reattach_window": 300,
                "max_buffer_size": 1048576,
                "buffer_overflow_policy": "RING",
            },
        },
        "capabilities": {"config_version": 1, "effective_at": now, "capabilities": []},
    }
    for scope, payload in scopes.items():
        url = f"{master}/v1/nodes/config/{scope}"
        status, answer = await call(http, "PUT", url, node["access_token"], payload)
        if status != 200:
            raise RuntimeError(f"config {scope}: {status} {answer}")
    status, nodes = await call(http, "GET", f"{master}/v1/edge/nodes", edge_token)
    return nodes["nodes"][0]["node_id"]


def time_now():
    from rawp.clock import SYSTEM_CLOCK

    return SYSTEM_CLOCK.now()


async def read_stream(
    ws,
    count: int,
    deadline: float,
    latencies: list[tuple[int, float]],
    size: list[int],
    repeats: list[int],
) -> int:
    """Frames received in order, once each; a frame whose number is not past the last one's
    (a repeat, or out of order) is counted in `repeats` instead (issue 35: 0 repeated).
    `latencies` gets (when the frame was sent, ns; its latency, s) for each."""
    # One deadline for the whole read (the loop's clock is time.monotonic): a wait_for per
    # frame made a task per frame, in the process that shares the master's cores.
    got, last = 0, -1
    with contextlib.suppress(TimeoutError, ConnectionClosed):  # the rest count as lost
        async with asyncio.timeout_at(deadline):
            while got < count:
                raw = await ws.recv()
                arrived = time.monotonic_ns()
                data = orjson.loads(raw)
                if data["type"] == "agent.text.delta":
                    size[0] = max(size[0], len(raw))  # the largest frame's text, characters
                    number, sent, *_ = (int(x) for x in data["payload"]["text"].split()[:2])
                    if number <= last:
                        repeats[0] += 1
                        continue
                    last = number
                    latencies.append((sent, (arrived - sent) / 1e9))
                    if LATENCY_TRACE is not None:
                        LATENCY_TRACE.append((sent, arrived))
                    got += 1
    return got


async def edge_token(http, master: str) -> str:
    async with http.post(
        f"{master}/v1/edge/auth/token",
        json={"subject": SUBJECT},
        headers={"Authorization": f"Bearer {EDGE_SECRET}"},
    ) as response:
        return (await response.json())["access_token"]


async def open_session(http, master: str, node_id: str, token: dict, edge: bool, args):
    """One session, and its edge socket when `edge` (None: the session has none). `token`
    holds the edge user's token, renewed here when it expires (opening may outlast it)."""
    url = f"{master}/v1/edge/nodes/{node_id}/sessions"
    body = {"agent_name": "demo", "workspace_path": "/tmp"}
    status, made = await call(http, "POST", url, token["value"], body)
    if status == 401 and made.get("error_code") == "TOKEN_EXPIRED":
        token["value"] = await edge_token(http, master)
        status, made = await call(http, "POST", url, token["value"], body)
    if status != 201:
        raise RuntimeError(f"session: {status} {made}")
    if not edge:
        return made["session_id"], None
    ws_url = master.replace("http://", "ws://") + (
        f"/v1/edge/ws/stream?ticket={made['edge_ws_ticket']}&session_id={made['session_id']}"
    )
    ws = await connect(
        ws_url,
        subprotocols=["rawp-dps-1.0"],
        max_size=None,
        # By default the edge offers permessage-deflate, as browsers do.
        compression=None if args.no_deflate else "deflate",
        open_timeout=LIMIT,
        # No keepalive pings from 10,000 edges: the master's own pings keep the socket up,
        # and a traced master's memory dump would outlast a ping timeout.
        ping_interval=None,
    )
    return made["session_id"], ws


def said_failure(task: asyncio.Task) -> None:
    """A fake client's stream that failed: its frames count as lost, and here is why."""
    if not task.cancelled() and task.exception() is not None:
        traceback.print_exception(task.exception(), file=sys.stdout)


def quiet_collector() -> None:
    """The load generator's processes (the edges, the fake client) hold 10,000 sockets and
    their frames: a full collection there paused them for up to 635 ms (measured with a
    collector callback), which read as the master's latency. Once the sessions are open,
    what they made is frozen and the collector is off for the streaming; these processes
    are short-lived measuring tools, not the system measured (the master keeps its own
    policy, master/gc_pauses.py)."""
    gc.collect()
    gc.freeze()
    gc.disable()


def worst_seconds(trace: list[tuple[int, int]], shown: int = 8) -> list[str]:
    """The seconds (from the first frame sent) whose frames arrived latest, by their max."""
    first = min(sent for sent, _ in trace)
    by_second: dict[int, list[float]] = {}
    for sent, arrived in trace:
        by_second.setdefault((sent - first) // 10**9, []).append((arrived - sent) / 1e6)
    rows = sorted(by_second.items(), key=lambda item: -max(item[1]))[:shown]
    return [
        f"  {second:3d} s: {len(ms):,} frames, p99 {percentile(ms, 0.99):.0f}, max {max(ms):.0f}"
        for second, ms in sorted(rows)
    ]


def cpu_seconds(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


def kernel_seconds(proc: psutil.Process) -> float:
    """The system time: the kernel's work for the process (socket reads, writes, wake-ups)."""
    return proc.cpu_times().system


def rss_mb(proc: psutil.Process) -> float:
    return proc.memory_info().rss / 2**20


async def measure(
    master: str, client: str, master_proc: psutil.Process, args, client_proc=None
) -> dict:
    figures: dict = {"rss_idle_mb": rss_mb(master_proc)}
    edges = edges_that_fit(args.sessions, args.fd_limit)
    curve: list[tuple[int, float]] = [(0, figures["rss_idle_mb"])]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.parallel)) as http:
        token = {"value": await edge_token(http, master)}
        node_id = await pair(http, master, client, token["value"])
        if args.trace_memory:
            master_proc.send_signal(signal.SIGUSR2)  # the baseline snapshot
            await asyncio.sleep(5)
        began = time.monotonic()
        sockets: list[tuple[str, object]] = []
        every = max(1, args.sessions // SAMPLES)
        try:
            next_index = 0

            async def opener() -> None:
                nonlocal next_index
                while next_index < args.sessions:
                    index, next_index = next_index, next_index + 1
                    sockets.append(
                        await open_session(http, master, node_id, token, index < edges, args)
                    )
                    if len(sockets) % every == 0:
                        curve.append((len(sockets), rss_mb(master_proc)))

            await asyncio.gather(*(opener() for _ in range(args.parallel)))
            figures["open_s"] = time.monotonic() - began
            await asyncio.sleep(2)
            quiet_collector()  # the edges' own pauses would be counted as the master's latency
            # What the open sessions cost with nothing relayed (keepalives, timers, bookkeeping):
            # the part of the CPU per frame that does not come from the frames.
            idle_from, cpu_before = time.monotonic(), cpu_seconds(master_proc)
            await asyncio.sleep(IDLE_S)
            figures["idle_cpu"] = (cpu_seconds(master_proc) - cpu_before) / (
                time.monotonic() - idle_from
            )
            figures["rss_open_mb"] = rss_mb(master_proc)
            curve.append((len(sockets), figures["rss_open_mb"]))
            if args.trace_memory:
                master_proc.send_signal(signal.SIGUSR1)
                await asyncio.sleep(args.trace_wait)  # a traced process's snapshot takes a while
            attached = [(sid, ws) for sid, ws in sockets if ws is not None]
            streaming = attached[: max(1, int(len(sockets) * args.share))]
            count = int(args.rate * args.seconds)
            latencies: list[tuple[int, float]] = []
            deadline = time.monotonic() + args.seconds + LIMIT
            frame_size, repeats = [0], [0]
            readers = [
                asyncio.create_task(
                    read_stream(ws, count, deadline, latencies, frame_size, repeats)
                )
                for _, ws in streaming
            ]
            pad = max(0, args.frame_bytes - FRAME_BYTES)
            # Independent users do not press enter in the same instant: each session's prompt
            # goes out at a random moment of the first period, as its frames then do. All at
            # once (`--prompts-at-once`, or `--aligned`) every prompt reaches the master
            # within a fraction of a second, a burst the sessions' first frames queue behind.
            at_once = args.prompts_at_once or args.aligned
            began = time.monotonic()
            offsets = sorted(
                (0.0 if at_once else random.random() / args.rate, index)
                for index in range(len(streaming))
            )
            for offset, index in offsets:
                delay = began + offset - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                sid, ws = streaming[index]
                prompt = make_frame(
                    "control.prompt.request",
                    {"prompt_text": f"{args.rate} {count} {int(args.aligned)} {pad}"},
                    session_id=sid,
                )
                await ws.send(dump_frame(prompt))
            # Every session streams once a period has passed since the last prompt went out.
            everyone_from = time.monotonic_ns() + int(1e9 / args.rate)
            peak = figures["rss_open_mb"]
            # Who has the two cores while streaming: the master, the fake client and the edges
            # (this process), so a backlog can be told from a slow master.
            others = {"client": client_proc, "edges": psutil.Process()}
            others_before = {k: cpu_seconds(p) for k, p in others.items() if p is not None}
            cpu_before, streamed_from = cpu_seconds(master_proc), time.monotonic()
            kernel_before = kernel_seconds(master_proc)
            while not all(r.done() for r in readers):
                peak = max(peak, rss_mb(master_proc))
                await asyncio.sleep(0.2)
            streamed_s = time.monotonic() - streamed_from
            received = sum(r.result() for r in readers)
            every = [latency for _, latency in latencies]
            all_streaming = [lat for sent, lat in latencies if sent >= everyone_from]
            figures.update(
                # What the master managed: frames delivered a second until the last arrived,
                # against the rate offered, and the share of one core it used meanwhile.
                delivered_per_s=received / streamed_s,
                offered_per_s=args.rate * len(streaming),
                master_cpu=(cpu_seconds(master_proc) - cpu_before) / streamed_s,
                master_kernel=(kernel_seconds(master_proc) - kernel_before) / streamed_s,
                **{
                    f"{k}_cpu": (cpu_seconds(others[k]) - before) / streamed_s
                    for k, before in others_before.items()
                },
            )
            figures.update(
                rss_peak_mb=peak,
                streaming=len(streaming),
                sent=count * len(streaming),
                lost=count * len(streaming) - received,
                repeated=repeats[0],
                p50_ms=percentile(every, 0.5) * 1000 if every else NAN,
                p99_ms=percentile(every, 0.99) * 1000 if every else NAN,
                # The frames sent while every session streams: the start-up second, with the
                # prompts still coming in and each stream's first frame, left out.
                p99_all_streaming_ms=(
                    percentile(all_streaming, 0.99) * 1000 if all_streaming else NAN
                ),
                all_streaming_share=len(all_streaming) / max(1, len(every)),
                frame_chars=frame_size[0],
                relayed_kib=frame_size[0] * count / 1024,  # by each streaming session
                prompts_at_once=at_once,
            )
            if LATENCY_TRACE is not None:
                figures["worst_seconds"] = worst_seconds(LATENCY_TRACE)
            # Issue 35: SIGTERM with every session live; the master must be gone within the
            # 10 s Docker and systemd give it, each edge closed with a code it resumes from.
            figures.update(await stop_master(master_proc, sockets))
        finally:
            for _, ws in sockets:
                if ws is not None:
                    with contextlib.suppress(Exception):
                        await ws.close()
    figures["sessions"] = len(sockets)
    figures["parallel"] = args.parallel
    figures["aligned"] = args.aligned
    figures["fd_limit"] = args.fd_limit
    figures["edges"] = sum(1 for _, ws in sockets if ws is not None)
    figures["rss_curve"] = curve
    figures["kb_per_session"] = (
        (figures["rss_open_mb"] - figures["rss_idle_mb"]) * 1024 / max(1, len(sockets))
    )
    figures["rss_target_mb"] = rss_target(args.sessions)
    figures["met"] = float(
        figures["rss_peak_mb"] <= figures["rss_target_mb"]
        and figures["p99_ms"] <= 50
        and figures["lost"] == 0
        and figures["repeated"] == 0
        # Issue 35: as many edge sockets as the descriptor limit allows (two per session in
        # the master: 9,800 of 10,000 with the limit of 20,000 here).
        and figures["edges"] == edges_that_fit(figures["sessions"], args.fd_limit)
        and figures["stop_s"] <= 10
    )
    return figures


def same_shape_floor(args, figures: dict) -> None:
    """The bare forwarder's CPU per message with as many sockets streaming, at the same rate
    and frame size, for as long (bounded by 15 s), into `figures` (issue 35)."""
    sockets = min(figures["streaming"], figures["edges"])
    if args.no_floor or sockets == 0:
        return  # edges_that_fit's reserve leaves the forwarder its 2 × sockets descriptors
    floor = forwarder.floor(sockets, args.rate, min(args.seconds, 15.0), figures["frame_chars"])
    figures.update(
        floor_sockets=sockets,
        floor_us=floor["us"],
        floor_kernel_us=floor["system_us"],
    )


async def stop_master(master_proc: psutil.Process, sockets: list) -> dict:
    """SIGTERM → exit, in seconds (inf: still running after STOP_LIMIT), and how many edge
    sockets were closed with 1001 or 1012, the codes an edge reconnects after."""
    began = time.monotonic()
    master_proc.send_signal(signal.SIGTERM)
    try:
        await asyncio.to_thread(master_proc.wait, STOP_LIMIT)
        stop_s = time.monotonic() - began
    except psutil.TimeoutExpired:
        stop_s = float("inf")
    edges = [ws for _, ws in sockets if ws is not None]

    async def closed(ws) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(ws.wait_closed(), 5)

    await asyncio.gather(*(closed(ws) for ws in edges))
    resumable = sum(1 for ws in edges if ws.close_code in (1001, 1012))
    return {"stop_s": stop_s, "closed_resumable": resumable}


def rss_target(sessions: int) -> float:
    """300 MB for 1,000 sessions (issue 7), 1 GB for 10,000 (issue 20 §3)."""
    return 300.0 if sessions <= SESSIONS else 1024.0


def run(args) -> dict:
    processes = Processes()
    with tempfile.TemporaryDirectory(prefix="rawp-bench-scale-") as temp:
        try:
            master_port, client_port = free_port(), free_port()
            args.fd_limit = raise_fd_limit()  # before the children start: they inherit it
            master_args = ["master", "--dev", "--port", str(master_port), "--state-dir", temp]
            # The bench user's Edge API budget, not everybody's: opening is then paced by the
            # master's own speed, not by 30 requests a second.
            master_args += ["--edge-user-rate-limits", f"{SUBJECT}=1000000/s"]
            if args.trace_memory:
                traced = Path(temp) / "traced_master.py"
                traced.write_text(TRACED_MASTER)
                argv = [sys.executable, str(traced), str(Path(args.trace_memory).resolve())]
            else:
                argv = [sys.executable, "-m", "rawp_app.cli"]
            master = processes.start(
                [*argv, *master_args],
                env={"RAWP_EDGE_SECRET": EDGE_SECRET},
                stdout=(Path(temp) / "master.log").open("ab"),
            )
            client = processes.start(
                [sys.executable, __file__, "--play-client", str(client_port)],
                stdout=(Path(temp) / "client.log").open("ab"),
            )
            master_url = f"http://127.0.0.1:{master_port}"
            client_url = f"http://127.0.0.1:{client_port}"
            wait_for_http(f"{master_url}/v1/edge/nodes", proc=master, timeout=60)
            wait_for_http(f"{client_url}/v1/health", proc=client, timeout=60)
            figures = asyncio.run(
                measure(
                    master_url,
                    client_url,
                    psutil.Process(master.pid),
                    args,
                    client_proc=psutil.Process(client.pid),
                )
            )
        finally:
            processes.close()
    same_shape_floor(args, figures)  # the master and the fake client gone: the cores are free
    return figures


NAN = float("nan")  # a figure an older run did not record


def report(f: dict) -> str:
    return "\n".join(
        [
            "| measure | figure | target |",
            "|---|---|---|",
            f"| master RSS before any session (baseline) | {f['rss_idle_mb']:.0f} MB | |",
            f"| master RSS with {f['sessions']:,.0f} sessions open | {f['rss_open_mb']:.0f} MB | |",
            f"| per idle session (open − baseline) / sessions | {f['kb_per_session']:.1f} KB | |",
            f"| edge sockets attached | {f['edges']:,.0f} of {f['sessions']:,.0f} "
            f"(descriptor limit {f['fd_limit']:,.0f}) | all that fit |",
            f"| master RSS peak while {f['streaming']:,.0f} stream | {f['rss_peak_mb']:.0f} MB "
            f"| ≤ {f['rss_target_mb']:,.0f} MB |",
            f"| opening the sessions (create + edge socket, {f['parallel']:.0f} at a time) "
            f"| {f['open_s']:.1f} s | |",
            f"| frame latency p50 / p99 | {f['p50_ms']:.1f} / {f['p99_ms']:.1f} ms | p99 ≤ 50 ms |",
            f"| p99 of the frames sent once every session streams "
            f"({f.get('all_streaming_share', NAN):.0%} of them: from a period after the last "
            f"prompt) | {f.get('p99_all_streaming_ms', NAN):.1f} ms | |",
            f"| frames lost | {f['lost']:,.0f} of {f['sent']:,.0f} | 0 |",
            f"| frames repeated or out of order | {f['repeated']:,.0f} | 0 |",
            f"| frames/s delivered while streaming (offered: {f['offered_per_s']:,.0f}) "
            f"| {f['delivered_per_s']:,.0f} | |",
            f"| master CPU with every session open and silent | {f['idle_cpu']:.1%} "
            f"({f['idle_cpu'] / max(1, f['sessions']) * 1e6:.1f} µs a session a second) | |",
            f"| master CPU while streaming (100 % = one core) | {f['master_cpu']:.0%} | |",
            f"| master CPU per delivered frame: all / the kernel's | {per_frame_us(f):.0f} / "
            f"{f.get('master_kernel', NAN) / max(1.0, f['delivered_per_s']) * 1e6:.0f} µs | |",
            f"| floor: a bare asyncio forwarder, {f.get('floor_sockets', NAN):,.0f} sockets at "
            f"the same rate (bench/forwarder.py): all / the kernel's "
            f"| {f.get('floor_us', NAN):.1f} / {f.get('floor_kernel_us', NAN):.1f} µs a message "
            f"(the master {per_frame_us(f) / f.get('floor_us', NAN):.1f}×) | |",
            f"| the sessions' frames | {PHASES[bool(f.get('aligned'))]} | |",
            f"| the sessions' prompts | {PROMPTS[bool(f.get('prompts_at_once'))]} | |",
            f"| each frame / relayed by each streaming session | {f['frame_chars']:,.0f} B / "
            f"{f['relayed_kib']:,.0f} KiB (replay budget {SESSION_BYTES // 1024} KiB) | |",
            f"| SIGTERM → master exited, every session live | {f.get('stop_s', NAN):.1f} s "
            "| ≤ 10 s |",
            f"| edge sockets closed with a code they reconnect after (1001/1012) "
            f"| {f.get('closed_resumable', NAN):,.0f} of {f['edges']:,.0f} | all |",
            f"| load generator's CPU meanwhile: fake client / edges "
            f"| {f.get('client_cpu', NAN):.0%} / {f.get('edges_cpu', NAN):.0%} | |",
        ]
    )


def per_frame_us(f: dict) -> float:
    return f["master_cpu"] / max(1.0, f["delivered_per_s"]) * 1e6


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=SESSIONS)
    parser.add_argument("--share", type=float, default=STREAMING_SHARE)
    parser.add_argument("--rate", type=int, default=RATE)
    parser.add_argument("--seconds", type=float, default=SECONDS)
    parser.add_argument(
        "--trace-wait", type=float, default=30.0, help="seconds the memory dump is given"
    )
    parser.add_argument("--parallel", type=int, default=PARALLEL, help="sessions opened at once")
    parser.add_argument(
        "--aligned",
        action="store_true",
        help="every session's frames in step (a burst each period), not at random phases",
    )
    parser.add_argument(
        "--prompts-at-once",
        action="store_true",
        help="every session's prompt sent at once, not at a random moment of the first period",
    )
    parser.add_argument(
        "--frame-bytes",
        type=int,
        default=0,
        help="pad each frame to about this many bytes (a run past the replay budget)",
    )
    parser.add_argument(
        "--latency-trace",
        action="store_true",
        help="print the streaming's slowest seconds (when the late frames were sent)",
    )
    parser.add_argument("--play-client", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--no-deflate", action="store_true", help="edges do not offer permessage-deflate"
    )
    parser.add_argument(
        "--trace-memory", metavar="FILE", help="run the master under tracemalloc; top sites to FILE"
    )
    parser.add_argument(
        "--no-floor", action="store_true", help="skip the bare forwarder's floor after the run"
    )
    return parser


def args_for(**given) -> argparse.Namespace:
    """The command line's defaults with `given` in place: bench/run_all.py's runs."""
    args = parser().parse_args([])
    for name, value in given.items():
        if not hasattr(args, name):
            raise TypeError(f"scale.py has no option {name!r}")
        setattr(args, name, value)
    return args


def main() -> int:
    args = parser().parse_args()
    if args.play_client:
        serve_client(args.play_client)
        return 0
    global LATENCY_TRACE
    LATENCY_TRACE = [] if args.latency_trace else None
    figures = run(args)
    print(report(figures))
    if "worst_seconds" in figures:
        print("\nslowest seconds of the streaming (second sent: frames, p99, max ms):")
        print("\n".join(figures["worst_seconds"]))
    print("\nRSS while opening (sessions: MB): ", end="")
    print(", ".join(f"{n:,}: {mb:.0f}" for n, mb in figures["rss_curve"]))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{os.cpu_count()} CPUs; load average after the run: {load}")
    target = f"RSS ≤ {figures['rss_target_mb']:,.0f} MB, p99 ≤ 50 ms, none lost, stop ≤ 10 s"
    print(f"targets ({target}): {'met' if figures['met'] else 'NOT'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
