"""A Docker engine for the image tests: one that answers, or one started with the machine's
`docker-engine` tool (shared/tools/docker-engine beside the repository, as on this kind of
machine and in CI), stopped again after the tests if they started it. Where none can be had,
`unavailable()` says why, and the tests skip with that reason printed."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support import ROOT

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


@dataclass
class Engine:
    tool: Path | None
    started_pid: str | None  # dockerd's pid when these tests started it

    def stop(self) -> None:
        if self.tool is not None and self.started_pid is not None:
            subprocess.run([str(self.tool), "down", self.started_pid], timeout=60)


def get_engine() -> tuple[Engine | None, str]:
    """(engine, "") or (None, why there is none)."""
    tool = next((p for p in TOOL_PLACES if p.is_file()), None)
    if answers():
        return Engine(tool, None), ""
    if tool is None:
        return None, "no Docker engine answers and no docker-engine tool is here to start one"
    result = subprocess.run([str(tool), "up"], capture_output=True, text=True, timeout=600)
    said = (result.stdout + result.stderr).strip()
    if result.returncode != 0 or not answers():
        return None, f"no Docker engine could be started: {said}"
    pid = said.split()[1] if said.startswith("started ") else None
    return Engine(tool, pid), ""


def ensure_base_image(engine: Engine) -> None:
    """The Dockerfile's base: pulled, or the tool's local stand-in (the public registry is
    unreachable on this kind of machine). Instant once present."""
    if subprocess.run(["docker", "image", "inspect", BASE_IMAGE], capture_output=True).returncode:
        assert engine.tool is not None, f"{BASE_IMAGE} is missing and no tool can make it"
        result = subprocess.run(
            [str(engine.tool), "base", BASE_IMAGE], capture_output=True, text=True, timeout=900
        )
        assert result.returncode == 0, result.stdout + result.stderr
