"""Sessions at scale (issue 7 §2): `.venv/bin/python bench/scale.py`.

One real master process on loopback (`--dev`) and a load generator in two processes:

- **the client side**: this file run with `--play-client PORT`, a wire-level local client
  (aiohttp, the calls the master makes: health, agents, `session/init`, the data-plane
  WebSocket), paired through `POST /v1/auth/pair` with both config scopes synced. A prompt on a
  session makes it stream `agent.text.delta` frames at a fixed rate, each stamped with the
  system-wide monotonic clock;
- **the edge side**: this process, one edge user, one master edge WebSocket per session.

N sessions (1,000) are opened; a tenth of them get a prompt and stream at 20 frames/s for a
fixed time. Figures: the master's RSS (idle, before the sessions, with them open, at the peak
while streaming), per-frame latency p50 / p99 at the edge, frames lost (sent − received).
Targets: RSS ≤ 300 MB, p99 ≤ 50 ms, zero lost frames. Baseline in the same run: the master's
RSS before any session.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import orjson
import psutil
from aiohttp import WSMsgType, web
from relay import EDGE_SECRET, percentile
from websockets.asyncio.client import connect

from rawp.clock import iso
from rawp.frames import dump_frame, make_frame
from tests.support import Processes, free_port, wait_for_http

SESSIONS = 1_000
STREAMING_SHARE = 0.10
RATE = 20
SECONDS = 10.0
LIMIT = 120.0  # seconds any phase may take before the bench gives up


# ---- the client side (its own process) ----


def serve_client(port: int) -> None:
    sockets: dict[str, web.WebSocketResponse] = {}
    tickets: dict[str, str] = {}

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

    async def stream(rate: int, count: int, sid: str, ws) -> None:
        start = time.monotonic()
        for i in range(count):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            text = f"{i} {time.monotonic_ns()}"
            delta = make_frame(
                "agent.text.delta", {"content_index": 0, "text": text}, session_id=sid
            )
            await ws.send_str(dump_frame(delta))

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
                    rate, count = (int(x) for x in data["payload"]["prompt_text"].split())
                    task = asyncio.create_task(stream(rate, count, sid, ws))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
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
TRACED_MASTER = """\
import signal, sys, tracemalloc
tracemalloc.start(1)
def dump(*_):
    stats = tracemalloc.take_snapshot().statistics("filename")[:30]
    with open(sys.argv[1], "w") as out:
        out.write("\\n".join(str(line) for line in stats) + "\\n")
signal.signal(signal.SIGUSR1, dump)
from rawp.cli import main
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


async def read_stream(ws, count: int, deadline: float, latencies: list[float]) -> int:
    got = 0
    while got < count:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            raw = await asyncio.wait_for(ws.recv(), left)
        except (TimeoutError, Exception):
            break
        arrived = time.monotonic_ns()
        data = orjson.loads(raw)
        if data["type"] == "agent.text.delta":
            latencies.append((arrived - int(data["payload"]["text"].split()[1])) / 1e9)
            got += 1
    return got


async def measure(master: str, client: str, master_proc: psutil.Process, args) -> dict:
    figures: dict[str, float] = {"rss_idle_mb": master_proc.memory_info().rss / 2**20}
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{master}/v1/edge/auth/token",
            json={"subject": "bench:scale"},
            headers={"Authorization": f"Bearer {EDGE_SECRET}"},
        ) as response:
            edge_token = (await response.json())["access_token"]
        node_id = await pair(http, master, client, edge_token)
        began = time.monotonic()
        sockets = []
        try:
            body = {"agent_name": "demo", "workspace_path": "/tmp"}
            for _ in range(args.sessions):
                url = f"{master}/v1/edge/nodes/{node_id}/sessions"
                status, made = await call(http, "POST", url, edge_token, body)
                if status != 201:
                    raise RuntimeError(f"session {len(sockets) + 1}: {status} {made}")
                ws_url = master.replace("http://", "ws://") + (
                    f"/v1/edge/ws/stream?ticket={made['edge_ws_ticket']}"
                    f"&session_id={made['session_id']}"
                )
                ws = await connect(
                    ws_url,
                    subprotocols=["rawp-dps-1.0"],
                    max_size=None,
                    # By default the edge offers permessage-deflate, as browsers do.
                    compression=None if args.no_deflate else "deflate",
                )
                sockets.append((made["session_id"], ws))
            figures["open_s"] = time.monotonic() - began
            await asyncio.sleep(1)
            figures["rss_open_mb"] = master_proc.memory_info().rss / 2**20
            if args.trace_memory:
                master_proc.send_signal(signal.SIGUSR1)
                await asyncio.sleep(5)  # the snapshot of a traced process takes a while
            streaming = sockets[: max(1, int(len(sockets) * args.share))]
            count = int(args.rate * args.seconds)
            latencies: list[float] = []
            deadline = time.monotonic() + args.seconds + LIMIT
            readers = [
                asyncio.create_task(read_stream(ws, count, deadline, latencies))
                for _, ws in streaming
            ]
            for sid, ws in streaming:
                prompt = make_frame(
                    "control.prompt.request",
                    {"prompt_text": f"{args.rate} {count}"},
                    session_id=sid,
                )
                await ws.send(dump_frame(prompt))
            peak = figures["rss_open_mb"]
            while not all(r.done() for r in readers):
                peak = max(peak, master_proc.memory_info().rss / 2**20)
                await asyncio.sleep(0.2)
            received = sum(r.result() for r in readers)
            figures.update(
                rss_peak_mb=peak,
                streaming=len(streaming),
                sent=count * len(streaming),
                lost=count * len(streaming) - received,
                p50_ms=percentile(latencies, 0.5) * 1000 if latencies else float("nan"),
                p99_ms=percentile(latencies, 0.99) * 1000 if latencies else float("nan"),
            )
        finally:
            for _, ws in sockets:
                with contextlib.suppress(Exception):
                    await ws.close()
    figures["sessions"] = len(sockets)
    figures["met"] = float(
        figures["rss_peak_mb"] <= 300 and figures["p99_ms"] <= 50 and figures["lost"] == 0
    )
    return figures


def run(args) -> dict:
    processes = Processes()
    with tempfile.TemporaryDirectory(prefix="rawp-bench-scale-") as temp:
        try:
            master_port, client_port = free_port(), free_port()
            master_args = ["master", "--dev", "--port", str(master_port), "--state-dir", temp]
            if args.trace_memory:
                traced = Path(temp) / "traced_master.py"
                traced.write_text(TRACED_MASTER)
                argv = [sys.executable, str(traced), str(Path(args.trace_memory).resolve())]
            else:
                argv = [sys.executable, "-m", "rawp.cli"]
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
            return asyncio.run(measure(master_url, client_url, psutil.Process(master.pid), args))
        finally:
            processes.close()


def report(f: dict) -> str:
    return "\n".join(
        [
            "| measure | figure | target |",
            "|---|---|---|",
            f"| master RSS before any session (baseline) | {f['rss_idle_mb']:.0f} MB | |",
            f"| master RSS with {f['sessions']:,.0f} sessions open | {f['rss_open_mb']:.0f} MB | |",
            f"| master RSS peak while {f['streaming']:.0f} stream | {f['rss_peak_mb']:.0f} MB "
            "| ≤ 300 MB |",
            f"| opening the sessions (create + edge socket, one by one) | {f['open_s']:.1f} s | |",
            f"| frame latency p50 / p99 | {f['p50_ms']:.1f} / {f['p99_ms']:.1f} ms | p99 ≤ 50 ms |",
            f"| frames lost | {f['lost']:,.0f} of {f['sent']:,.0f} | 0 |",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=SESSIONS)
    parser.add_argument("--share", type=float, default=STREAMING_SHARE)
    parser.add_argument("--rate", type=int, default=RATE)
    parser.add_argument("--seconds", type=float, default=SECONDS)
    parser.add_argument("--play-client", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--no-deflate", action="store_true", help="edges do not offer permessage-deflate"
    )
    parser.add_argument(
        "--trace-memory", metavar="FILE", help="run the master under tracemalloc; top sites to FILE"
    )
    args = parser.parse_args()
    if args.play_client:
        serve_client(args.play_client)
        return 0
    figures = run(args)
    print(report(figures))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{os.cpu_count()} CPUs; load average after the run: {load}")
    print(f"targets (RSS ≤ 300 MB, p99 ≤ 50 ms, none lost): {'met' if figures['met'] else 'NOT'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
