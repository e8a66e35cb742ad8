"""Start-up benchmark (issue 7 §6): `.venv/bin/python bench/startup.py`.

`rawp up` (console platform, empty stdin, a temporary state dir) to the moment it prints
"ready N s after start" on stderr, measured from outside: from spawning the process to reading
that line, so interpreter start and imports count. Two kinds of run:

- **first**: a fresh state dir each time (keys generated, the client paired with the master);
- **again**: the same state dir as the run before (already paired), as a user's second start.

The figure `rawp up` prints itself (from the import of rawp_app/up.py) is kept beside it.
Baselines, in the same run: `python -c pass` and `python -c "import quart"` (spawn to exit).
Target: ≤ 3 s.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support import ROOT, Processes

RUNS = 3
READY = re.compile(r"ready ([0-9.]+) s after start")
LIMIT = 60.0  # seconds one start may take before the bench gives up


def time_to_exit(argv: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, timeout=LIMIT, cwd=ROOT)
    return time.perf_counter() - began


def time_to_ready(state_dir: Path) -> tuple[float, float]:
    """Spawn `rawp up`; seconds until its ready line, and the figure it printed itself."""
    processes = Processes()
    try:
        began = time.perf_counter()
        proc = processes.rawp(
            "up", "--platform", "console", "--state-dir", str(state_dir),
            stdin=subprocess.PIPE,  # open and empty: `rawp up` refuses /dev/null as its console
        )  # fmt: skip
        deadline = time.monotonic() + LIMIT
        seen = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline().decode()
            if not line and proc.poll() is not None:
                break
            seen.append(line)
            found = READY.search(line)
            if found:
                return time.perf_counter() - began, float(found.group(1))
        raise RuntimeError("rawp up never said it was ready:\n" + "".join(seen))
    finally:
        processes.close()  # the whole process group, even on error


def run(runs: int = RUNS) -> dict[str, float]:
    python = sys.executable
    bare = [time_to_exit([python, "-c", "pass"]) for _ in range(runs + 2)]
    quart = [time_to_exit([python, "-c", "import quart"]) for _ in range(runs + 2)]
    first, first_own, again, again_own = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="rawp-bench-up-") as temp:
        for index in range(runs):
            state = Path(temp) / f"state-{index}"
            outside, own = time_to_ready(state)
            first.append(outside)
            first_own.append(own)
            outside, own = time_to_ready(state)  # the same state dir: already paired
            again.append(outside)
            again_own.append(own)
    figures = {
        "bare": statistics.median(bare),
        "quart": statistics.median(quart),
        "first": statistics.median(first),
        "first_max": max(first),
        "first_own": statistics.median(first_own),
        "again": statistics.median(again),
        "again_max": max(again),
        "again_own": statistics.median(again_own),
    }
    figures["met"] = float(max(first + again) <= 3.0)
    return figures


def report(figures: dict[str, float]) -> str:
    return "\n".join(
        [
            "| measure | median | comparison |",
            "|---|---|---|",
            f"| `python -c pass` (spawn to exit) | {figures['bare']:.3f} s | baseline |",
            f'| `python -c "import quart"` | {figures["quart"]:.3f} s | baseline |',
            f"| `rawp up`, fresh state dir: spawn to ready | {figures['first']:.2f} s "
            f"(max {figures['first_max']:.2f} s) | {figures['first'] / figures['quart']:.1f}× "
            f"import quart; it reports {figures['first_own']:.2f} s itself |",
            f"| `rawp up`, paired state dir: spawn to ready | {figures['again']:.2f} s "
            f"(max {figures['again_max']:.2f} s) | {figures['again'] / figures['quart']:.1f}× "
            f"import quart; it reports {figures['again_own']:.2f} s itself |",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args()
    figures = run(args.runs)
    print(report(figures))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{os.cpu_count()} CPUs; load average after the run: {load}")
    print(f"target (every start ≤ 3 s): {'met' if figures['met'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
