"""File search through the master (issue 7 §4): `.venv/bin/python bench/search_relay.py`.

The relay benchmark's stack (a real master and a real paired client, separate processes), the
session's workspace a 100,000-file tree made as in `bench/file_search.py`. The same queries
(`file_search.QUERIES`) go as `control.file.search` frames on the client's own WebSocket
(direct) and on the master's edge WebSocket, alternately; each is timed from sending to its
`session.file.candidates` frame. Target (issue 7 §4, at the client): p50 ≤ 10 ms, p99 ≤ 30 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import file_search
import orjson
from relay import Stack, frame, percentile

from rawp.clock import new_id
from tests.support import Processes

ROUNDS = 2
WAIT = 60.0
SETTLE = 5.0


async def ask(ws, session_id: str, query: str) -> float:
    query_id = new_id()
    began = time.perf_counter()
    await ws.send(frame("control.file.search", {"query_id": query_id, "query": query}, session_id))
    while True:
        data = orjson.loads(await asyncio.wait_for(ws.recv(), WAIT))
        if data["type"] == "session.file.candidates" and data["payload"]["query_id"] == query_id:
            return time.perf_counter() - began


async def measure(stack: Stack, rounds: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {"direct": [], "master": []}
    token = await stack.edge_token()
    async with aiohttp.ClientSession() as http:
        sockets = {
            "direct": await stack.open_direct_path(http),
            "master": await stack.open_master_path(http, token),
        }
        try:
            for sid, ws in sockets.values():  # the index build, outside the figures
                await ask(ws, sid, "x")
            await asyncio.sleep(SETTLE)  # the watcher settles (file_search.py: ~2.4 s after build)
            for _ in range(rounds):
                for query in file_search.QUERIES:
                    for path, (sid, ws) in sockets.items():
                        samples[path].append(await ask(ws, sid, query))
        finally:
            for _, ws in sockets.values():
                with contextlib.suppress(Exception):
                    await ws.close()
    figures: dict[str, float] = {}
    for path, got in samples.items():
        figures[f"{path}_p50_ms"] = percentile(got, 0.5) * 1000
        figures[f"{path}_p99_ms"] = percentile(got, 0.99) * 1000
    figures["queries"] = len(samples["direct"])
    return figures


def run(files: int = file_search.TREE_SIZE, rounds: int = ROUNDS) -> dict[str, float]:
    processes = Processes()
    with tempfile.TemporaryDirectory(prefix="rawp-bench-search-") as temp:
        try:
            stack = Stack(Path(temp), processes)
            file_search.build_tree(stack.workspace, file_search.source_paths(files))
            stack.start()
            return asyncio.run(measure(stack, rounds))
        finally:
            processes.close()


def report(f: dict[str, float]) -> str:
    return "\n".join(
        [
            "| per query, at the edge | direct (client socket) | through the master | added |",
            "|---|---|---|---|",
            f"| p50 | {f['direct_p50_ms']:.1f} ms | {f['master_p50_ms']:.1f} ms "
            f"| {f['master_p50_ms'] - f['direct_p50_ms']:+.1f} ms |",
            f"| p99 | {f['direct_p99_ms']:.1f} ms | {f['master_p99_ms']:.1f} ms "
            f"| {f['master_p99_ms'] - f['direct_p99_ms']:+.1f} ms |",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=file_search.TREE_SIZE)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    figures = run(args.files, args.rounds)
    print(f"{figures['queries']:.0f} queries each way")
    print(report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
