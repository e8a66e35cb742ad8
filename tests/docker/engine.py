"""A Docker engine for the image tests: one that answers, or one started with the machine's
`docker-engine` tool (shared/tools/docker-engine beside the repository, as on this kind of
machine and in CI), stopped again after the tests if they started it. Where none can be had,
`unavailable()` says why, and the tests skip with that reason printed."""

from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support import ROOT, apt_install

BASE_IMAGE = "python:3.11-slim"  # the Dockerfile's FROM
TOOL_PLACES = (ROOT.parent / "shared/tools/docker-engine", Path("/work/shared/tools/docker-engine"))


def docker(*args: str, timeout: float = 120, check: bool = True, **kw) -> str:
    """Run `docker ARGS`; its stdout. A failure shows the command and what docker said."""
    result = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, **kw
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"docker {' '.join(args)} exited {result.returncode}:\n{result.stdout}{result.stderr}"
        )
    return result.stdout


def answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=15).returncode == 0
    except subprocess.TimeoutExpired:
        return False


# The two Docker modules may run at once on two xdist workers (and other checkouts on this
# machine may run them too): they share one engine. Who started it and how many modules use it
# is kept in a file under a lock, and the engine is stopped by the last module that leaves it,
# only if a test started it; builds of the image take turns, so the second is the cache's.
STATE = Path(tempfile.gettempdir()) / "rawp-docker-engine.json"


@contextlib.contextmanager
def _locked(name: str = "engine"):
    with open(STATE.with_suffix(f".{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _state() -> dict:
    try:
        return json.loads(STATE.read_text())
    except (OSError, ValueError):
        return {"pid": None, "users": 0}


@dataclass
class Engine:
    tool: Path | None

    def stop(self) -> None:
        """This module is done with the engine; the last one stops it if a test started it."""
        with _locked():
            state = _state()
            state["users"] = max(0, state["users"] - 1)
            if state["users"] == 0 and state["pid"] and self.tool is not None:
                subprocess.run([str(self.tool), "down", state["pid"]], timeout=60)
                state["pid"] = None
            STATE.write_text(json.dumps(state))


def get_engine() -> tuple[Engine | None, str]:
    """(engine, "") or (None, why there is none)."""
    tool = next((p for p in TOOL_PLACES if p.is_file()), None)
    with _locked():
        state = _state()
        if not answers():
            if tool is None:
                return (
                    None,
                    "no Docker engine answers and no docker-engine tool is here to start one",
                )
            # The tool installs docker.io with an apt-get that fails at once if another
            # holds dpkg's lock (the browser tests' Chromium, on a new machine): installed
            # here first, under the suite's one install lock.
            apt_install("docker.io", "iptables")
            result = subprocess.run([str(tool), "up"], capture_output=True, text=True, timeout=600)
            said = (result.stdout + result.stderr).strip()
            if result.returncode != 0 or not answers():
                return None, f"no Docker engine could be started: {said}"
            pid = said.split()[1] if said.startswith("started ") else None
            state = {"pid": pid, "users": 0}
        state["users"] += 1
        STATE.write_text(json.dumps(state))
    return Engine(tool), ""


def build_image(tag: str) -> float:
    """`docker build -t TAG .` of this checkout, one build at a time; its seconds."""
    with _locked("build"):
        started = time.monotonic()
        docker("build", "-q", "-t", tag, str(ROOT), timeout=900)
        return time.monotonic() - started


def ensure_base_image(engine: Engine, image: str = BASE_IMAGE) -> None:
    """`image` (the Dockerfile's base, or a compose service's): pulled, or the tool's local
    stand-in (the public registry is unreachable on this kind of machine). Instant once
    present. One make at a time: two workers making the same stand-in at once share its
    debootstrap directory, and one of them fails (seen in a loaded run on a new machine)."""
    with _locked("base"):
        if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode:
            assert engine.tool is not None, f"{image} is missing and no tool can make it"
            apt_install("debootstrap")  # as docker.io above: the tool's apt-get would fail
            result = subprocess.run(
                [str(engine.tool), "base", image], capture_output=True, text=True, timeout=1200
            )
            assert result.returncode == 0, result.stdout + result.stderr
