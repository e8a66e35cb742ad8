"""Helpers shared by the agent-kind tests: an agents file, a greeted session, one turn."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from tests.client.harness import frame, recv, recv_until


def write_agents_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agents.toml"
    path.write_text(text)
    return path


async def open_session(client, agent: str):
    sid, ws = await client.start_session(agent=agent)
    caps, catalog = await recv(ws), await recv(ws)
    assert caps["type"] == "session.capabilities" and catalog["type"] == "tool.catalog.publish"
    return sid, ws


async def send_prompt(ws, sid: str, text: str, refs: list[dict] | None = None, **extra) -> str:
    request = frame(
        "control.prompt.request",
        {"prompt_text": text, "file_references": refs or [], **extra},
        sid,
    )
    await ws.send(request)
    return request


async def turn(ws, sid: str, text: str, refs: list[dict] | None = None, wait: float = 60):
    """Send a prompt and return every frame up to its `session.turn.end`."""
    await send_prompt(ws, sid, text, refs)
    return await recv_until(ws, "session.turn.end", wait)


def kinds(frames: list[dict[str, Any]], *, drop_deltas: bool = False) -> list[str]:
    """The frame types in order; with `drop_deltas`, runs of deltas are left out."""
    return [f["type"] for f in frames if not (drop_deltas and f["type"].endswith(".delta"))]


def of(frames: list[dict[str, Any]], type: str) -> list[dict[str, Any]]:
    return [f["payload"] for f in frames if f["type"] == type]


def stop_reason(frames: list[dict[str, Any]]) -> str:
    assert frames[-1]["type"] == "session.turn.end"
    return frames[-1]["payload"]["stop_reason"]


async def drive(
    ws, sid: str, prompt: str, answers: Sequence[str] = (), wait: float = 90, refs=None
) -> list[dict]:
    """One turn; each approval request is answered with the next of `answers`, in order."""
    answers = list(answers)
    await send_prompt(ws, sid, prompt, refs)
    frames = []
    while True:
        frames.append(await recv(ws, wait))
        if frames[-1]["type"] == "agent.interaction.request":
            assert answers, f"an approval nobody expected: {frames[-1]['payload']}"
            ask = frames[-1]["payload"]
            wanted = answers.pop(0)  # an option_id, or the start of an option kind
            option = next(
                (o for o in ask["options"] if o["option_id"] == wanted),
                None,
            ) or next(o for o in ask["options"] if (o.get("kind") or "").startswith(wanted))
            reply = {"interaction_id": ask["interaction_id"], "option_id": option["option_id"]}
            await ws.send(
                frame(
                    "control.interaction.response", reply, sid, parent_id=frames[-1]["message_id"]
                )
            )
        if frames[-1]["type"] == "session.turn.end":
            assert not answers, f"approvals never asked: {answers}"
            return frames


def kill_agent(marker: str) -> int:
    """SIGKILL the process group of every child process whose command line has `marker`."""
    killed = 0
    for proc in psutil.Process().children(recursive=True):
        try:
            if marker in " ".join(proc.cmdline()):
                os.killpg(proc.pid, signal.SIGKILL)
                killed += 1
        except (psutil.Error, ProcessLookupError):
            continue  # gone or a zombie meanwhile
    return killed


def inline_table(values: dict[str, str]) -> str:
    """A TOML inline table, for an agent's `env` in a generated agents file."""
    return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in values.items()) + " }"
