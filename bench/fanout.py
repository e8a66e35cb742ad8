"""Fan-out benchmark (issue 7 §3): `.venv/bin/python bench/fanout.py`.

The relay benchmark's stack (a real master and a real paired client, separate processes on
loopback, the `flood` script agent), one session, and 1 / 10 / 100 edge WebSockets on it (the
first from session creation, the others from `POST /v1/edge/sessions/{id}/tickets`). The
prompt is sent on the first socket; every socket reads the turn to its end.

Per socket count: delivered frames/s (frames arrived on all sockets together, over the time
from the first arrival to the last) in flood mode, and per-frame latency p50 / p99 at a paced
rate. Baseline in the same run: the single socket. All sockets are read by this one Python
process, so at 100 sockets the receiver's own cost is part of the figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import orjson
import psutil
from relay import Stack, frame, percentile
from websockets.asyncio.client import connect

from tests.support import Processes

COUNTS = (1, 10, 100)
FLOOD_FRAMES = 2_000
PACED_RATE = 100
PACED_SECONDS = 2.0
TURN_LIMIT = 120.0


async def read_turn(ws, count: int, deadline: float) -> tuple[list[float], list[float]]:
    """Arrival times (s) and latencies (s) of this socket's deltas, up to `session.turn.end`."""
    arrivals: list[float] = []
    latencies: list[float] = []
    while True:
        raw = await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic()))
        got = time.monotonic_ns()
        data = orjson.loads(raw)
        if data["type"] == "agent.text.delta":
            arrivals.append(got / 1e9)
            latencies.append((got - int(data["payload"]["text"].split()[1])) / 1e9)
        elif data["type"] == "session.turn.end":
            break
    if len(arrivals) != count:
        raise RuntimeError(f"{count} frames sent, {len(arrivals)} received on one socket")
    return arrivals, latencies


async def turn(sockets, session_id: str, count: int, rate: int) -> dict[str, float]:
    deadline = time.monotonic() + TURN_LIMIT
    readers = [asyncio.create_task(read_turn(ws, count, deadline)) for ws in sockets]
    prompt = frame("control.prompt.request", {"prompt_text": f"{count} {rate}"}, session_id)
    await sockets[0].send(prompt)
    results = await asyncio.gather(*readers)
    arrivals = [t for got, _ in results for t in got]
    latencies = [x for _, got in results for x in got]
    span = max(arrivals) - min(arrivals)
    return {
        "fps": (len(arrivals) - 1) / span if span > 0 else 0.0,
        "p50_ms": percentile(latencies, 0.5) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
    }


async def open_sockets(stack: Stack, http: aiohttp.ClientSession, token: str, count: int):
    session_id, first = await stack.open_master_path(http, token)
    sockets = [first]
    headers = {"Authorization": f"Bearer {token}"}
    base = stack.master_url.replace("http://", "ws://")
    try:
        for _ in range(count - 1):
            body = await new_ticket(stack, http, headers, session_id)
            url = f"{base}/v1/edge/ws/stream?ticket={body['edge_ws_ticket']}"
            url += f"&session_id={session_id}"
            sockets.append(await connect(url, subprotocols=["rawp-dps-1.0"], max_size=None))
    except BaseException:
        await close_all(sockets)
        raise
    return session_id, sockets


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


async def new_ticket(stack: Stack, http: aiohttp.ClientSession, headers, session_id: str):
    """One more edge ticket; the Edge API's rate limit is honoured (Retry-After), boundedly."""
    url = f"{stack.master_url}/v1/edge/sessions/{session_id}/tickets"
    for _ in range(100):
        async with http.post(url, headers=headers) as response:
            body = await response.json()
            if response.status == 201:
                return body
            if response.status != 429:
                raise RuntimeError(f"ticket: {response.status} {body}")
            wait = float(response.headers.get("Retry-After", "0.1"))
        await asyncio.sleep(min(2.0, max(0.05, wait)))
    raise RuntimeError("the ticket rate limit never let up")


async def close_all(sockets) -> None:
    for ws in sockets:
        with contextlib.suppress(Exception):
            await ws.close()


async def measure(stack: Stack, counts, flood: int, paced_seconds: float) -> dict[int, dict]:
    figures: dict[int, dict] = {}
    master = psutil.Process(stack.processes.procs[0].pid)  # the first process started
    token = await stack.edge_token()
    async with aiohttp.ClientSession() as http:
        for count in counts:
            session_id, sockets = await open_sockets(stack, http, token, count)
            try:
                await turn(sockets, session_id, 200, 0)  # warm up
                master_cpu, own_cpu = cpu_seconds(master), time.process_time()
                began = time.monotonic()
                flooded = await turn(sockets, session_id, flood, 0)
                wall = time.monotonic() - began
                master_cpu = (cpu_seconds(master) - master_cpu) / wall
                own_cpu = (time.process_time() - own_cpu) / wall
                paced = await turn(sockets, session_id, int(PACED_RATE * paced_seconds), PACED_RATE)
                figures[count] = {
                    "fps": flooded["fps"],
                    "p50_ms": paced["p50_ms"],
                    "p99_ms": paced["p99_ms"],
                    "master_cpu": master_cpu,
                    "receiver_cpu": own_cpu,
                }
            finally:
                await close_all(sockets)
                with contextlib.suppress(Exception):
                    await http.delete(
                        f"{stack.master_url}/v1/edge/sessions/{session_id}",
                        headers={"Authorization": f"Bearer {token}"},
                    )
    return figures


def run(counts=COUNTS, flood: int = FLOOD_FRAMES, paced_seconds: float = PACED_SECONDS):
    """Start the stack, measure each socket count, stop every process (even on error)."""
    processes = Processes()
    with tempfile.TemporaryDirectory(prefix="rawp-bench-fanout-") as temp:
        try:
            stack = Stack(Path(temp), processes)
            stack.start()
            return asyncio.run(measure(stack, counts, flood, paced_seconds))
        finally:
            processes.close()


def report(figures: dict[int, dict]) -> str:
    one = figures[min(figures)]
    rows = [
        f"| edge sockets | delivered frames/s (flood, all sockets) | vs 1 socket "
        f"| latency p50 / p99 at {PACED_RATE} frames/s | CPU during flood: master / receiver |",
        "|---|---|---|---|---|",
    ]
    for count, got in sorted(figures.items()):
        rows.append(
            f"| {count} | {got['fps']:,.0f} | {got['fps'] / one['fps']:.1f}× "
            f"| {got['p50_ms']:.2f} / {got['p99_ms']:.2f} ms "
            f"| {got['master_cpu']:.0%} / {got['receiver_cpu']:.0%} |"
        )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=FLOOD_FRAMES)
    parser.add_argument("--paced-seconds", type=float, default=PACED_SECONDS)
    parser.add_argument("--sockets", type=int, nargs="+", default=list(COUNTS))
    args = parser.parse_args()
    print(report(run(args.sockets, args.frames, args.paced_seconds)))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{os.cpu_count()} CPUs; load average after the run: {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
