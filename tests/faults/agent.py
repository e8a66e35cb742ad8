"""The deterministic agent of the fault trials: a `script` agent in jsonl mode (docs/agents.md)
that answers `count N PAUSE TAG` with N `agent.text.delta` frames "TAG line 1".."TAG line N",
PAUSE seconds apart; it writes `TAG.started` (holding its pid) in its marker directory first
and `TAG.done` last. `quiet 1 SECONDS TAG` first sleeps SECONDS without a word (an agent
thinking), then answers one line.

The tag names the trial, so a frame can be told apart from another trial's by its content as
well as by its `message_id`; the marker files let a test wait for "the client has started the
turn" (a strike before any frame of it) and "the client has produced the whole turn" (the
condition a freeze lasts until) without watching the clock.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

SCRIPT = """\
import json, os, pathlib, sys, time
kind, count, pause, tag = os.environ["RAWP_PROMPT"].split()[:4]
pathlib.Path(os.environ["FAULT_MARKERS"], tag + ".started").write_text(str(os.getpid()))
if kind == "quiet":  # an agent thinking in silence: nothing written, so no broken pipe to see
    time.sleep(float(pause))
for n in range(1, int(count) + 1):
    frame = {"type": "agent.text.delta",
             "payload": {"content_index": 0, "text": f"{tag} line {n}\\n"}}
    print(json.dumps(frame), flush=True)
    if kind == "count":
        time.sleep(float(pause))
pathlib.Path(os.environ["FAULT_MARKERS"], tag + ".done").touch()
"""

LINES = 60
PAUSE = 0.005  # a few ms between frames: a turn of ~0.3 s plus the relay's own latency


def install(tmp: Path) -> tuple[Path, Path]:
    """Writes the script and an agents file naming it `counter`; returns (agents file, marker
    directory)."""
    markers = tmp / "markers"
    markers.mkdir(exist_ok=True)
    script = tmp / "counter_jsonl.py"
    script.write_text(SCRIPT)
    agents = tmp / "fault-agents.toml"
    agents.write_text(
        '[agents.counter]\nkind = "script"\nmode = "jsonl"\n'
        f'command = ["{sys.executable}", "{script}"]\n'
        f'env = {{ FAULT_MARKERS = "{markers}" }}\n'
    )
    return agents, markers


def prompt_text(tag: str, lines: int = LINES, pause: float = PAUSE) -> str:
    return f"count {lines} {pause} {tag}"


def quiet_prompt_text(tag: str, seconds: float) -> str:
    """A prompt the agent thinks about silently for `seconds` before a one-line answer."""
    return f"quiet 1 {seconds} {tag}"


def expected(tag: str, lines: int = LINES) -> list[str]:
    return [f"{tag} line {n}\n" for n in range(1, lines + 1)]


def wait_for_file(path: Path, limit: float = 15.0) -> None:
    """Until `path` exists (one of the agent's markers), failing after `limit` seconds;
    blocking, for `asyncio.to_thread` (a file's appearance is nothing an event loop can await).
    """
    deadline = time.monotonic() + limit
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear within {limit}s")
        time.sleep(0.01)
