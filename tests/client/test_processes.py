"""Agent processes (RAWP §5.2, §7.2): only listed agents run, each in its own process group,
ended with SIGTERM then SIGKILL after 5 s; the script kind's plain and jsonl modes."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from pathlib import Path

import aiohttp
import orjson
import psutil
import pytest
from websockets.asyncio.client import connect

from client.agents import AgentsFileError, load_agents
from client.link.auth import ClientAuth
from client.state import StateDir
from rawp.clock import new_id, new_secret
from tests.client.harness import frame, recv, recv_until, running_client
from tests.support import free_port

STUBBORN = """
import json, os, signal, subprocess, sys, time
marker = os.environ["MARKER"]
def ignore(signum, frame):
    open(marker, "a").write("SIGTERM ignored\\n")
signal.signal(signal.SIGTERM, ignore)
child = subprocess.Popen(["sleep", "600"])  # a grandchild in the same process group
open(marker + ".pids", "w").write(f"{os.getpid()} {child.pid}")
print(json.dumps({"type": "agent.text.delta", "payload": {"content_index": 0, "text": "up"}}),
      flush=True)
while True:
    time.sleep(0.05)
"""

PLAIN = """
import os, sys
data = sys.stdin.read()
print("args:", " ".join(sys.argv[1:]))
print("stdin:", data)
print("env:", os.environ["RAWP_PROMPT"], os.environ["RAWP_AGENT_NAME"])
print("warning: something odd", file=sys.stderr, flush=True)
sys.exit(3)
"""

BAD_JSONL = """
import json
print("this is not json", flush=True)
print(json.dumps({"type": "session.turn.end", "payload": {}}), flush=True)
print(json.dumps({"type": "agent.text.delta", "payload": {"text": 5}}), flush=True)
print(json.dumps({"type": "agent.text.delta", "payload": {"content_index": 0, "text": "ok"}}),
      flush=True)
"""


def not_running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def eventually_gone(pid: int) -> None:
    for _ in range(500):
        if not psutil.pid_exists(pid):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"pid {pid} is still there")


def write_agents(tmp_path: Path, scripts: dict[str, tuple[str, str]], extra: str = "") -> Path:
    lines = []
    for name, (mode, source) in scripts.items():
        script = tmp_path / f"{name}.py"
        script.write_text(source)
        lines.append(
            f'[agents.{name}]\nkind = "script"\nmode = "{mode}"\n'
            f'command = ["{sys.executable}", "{script}"]\n'
            f'env = {{ MARKER = "{tmp_path}/marker" }}\n'
        )
    file = tmp_path / "agents.toml"
    file.write_text("\n".join(lines) + extra)
    return file


async def test_a_child_ignoring_sigterm_is_killed_after_five_seconds(tmp_path):
    agents = write_agents(tmp_path, {"stubborn": ("jsonl", STUBBORN)})
    async with running_client(tmp_path, agents_file=agents, kill_grace=5.0) as client:
        sid, ws = await client.start_session(agent="stubborn")
        await recv(ws), await recv(ws)
        await ws.send(frame("control.prompt.request", {"prompt_text": "go"}, sid))
        await recv_until(ws, "agent.text.delta")
        agent_pid, grandchild_pid = map(int, (tmp_path / "marker.pids").read_text().split())
        # Its own process group, led by its supervisor (the client's child), grandchild in it.
        group = os.getpgid(agent_pid)
        assert group != os.getpgid(0) and os.getpgid(grandchild_pid) == group
        assert psutil.Process(agent_pid).ppid() == group
        assert psutil.Process(group).ppid() == os.getpid()
        started = time.monotonic()
        status, _ = await client.request("DELETE", f"/v1/session/{sid}")
        waited = time.monotonic() - started
        assert status == 204
        assert "SIGTERM ignored" in (tmp_path / "marker").read_text()
        # C-SESS-06: the grace period was honoured before SIGKILL, and then it was over.
        assert waited >= 4.9
        assert not psutil.pid_exists(group)  # the supervisor: killed and reaped by the client
        # The agent and the grandchild were reparented to init when their parents died; they
        # are dead at once and reaped by init shortly after.
        assert not_running(agent_pid) and not_running(grandchild_pid)
        await eventually_gone(agent_pid)
        await eventually_gone(grandchild_pid)
        assert (await client.request("GET", "/v1/health"))[1]["status"] == "online"


async def test_plain_mode_stdout_text_stderr_stream_exit_status(tmp_path):
    agents = write_agents(tmp_path, {"plain": ("plain", PLAIN)})
    async with running_client(tmp_path, agents_file=agents) as client:
        (client.workspace / "-rf").write_text("a file with a hostile name")
        (client.workspace / "b.txt").write_text("b")
        sid, ws = await client.start_session(agent="plain")
        await recv(ws), await recv(ws)
        refs = [
            {"ref_id": "a", "path": "-rf", "display_path": "-rf"},
            {"ref_id": "b", "path": "b.txt", "display_path": "b.txt"},
        ]
        (client.workspace / "c.txt").write_text("c")
        await ws.send(
            frame(
                "control.prompt.request",
                {
                    "prompt_text": "see <@file:a|-rf> and <@file:b|b.txt>",
                    "file_references": refs,
                    "context_files": [{"path": "c.txt"}, {"path": "b.txt"}, {"path": "no.txt"}],
                },
                sid,
            )
        )
        frames = await recv_until(ws, "session.turn.end")
    text = "".join(f["payload"]["text"] for f in frames if f["type"] == "agent.text.delta")
    # Paths as arguments, never as options; context files after the tokens' files, once each.
    assert "args: ./-rf b.txt c.txt\n" in text
    assert "stdin: see -rf and b.txt\n" in text
    assert "env: see -rf and b.txt plain\n" in text
    stream = [f for f in frames if f["type"] == "tool.invoke.stream"]
    assert stream and stream[0]["payload"]["stream"] == "stderr"
    assert stream[0]["payload"]["text"] == "warning: something odd\n"
    error = next(f for f in frames if f["type"] == "agent.error")
    assert error["payload"]["code"] == "AGENT_EXITED" and "status 3" in error["payload"]["message"]
    assert frames[-1]["payload"]["stop_reason"] == "error"


async def test_jsonl_lines_that_break_the_protocol_are_reported_not_fatal(tmp_path):
    agents = write_agents(tmp_path, {"bad": ("jsonl", BAD_JSONL)})
    async with running_client(tmp_path, agents_file=agents) as client:
        sid, ws = await client.start_session(agent="bad")
        await recv(ws), await recv(ws)
        await ws.send(frame("control.prompt.request", {"prompt_text": "go"}, sid))
        frames = await recv_until(ws, "session.turn.end")
    warnings = [f["payload"] for f in frames if f["type"] == "agent.error"]
    assert [w["code"] for w in warnings] == ["SCRIPT_PROTOCOL"] * 3
    assert all(w["severity"] == "warning" for w in warnings)
    assert "session.turn.end" in warnings[1]["message"]
    assert [f["payload"]["text"] for f in frames if f["type"] == "agent.text.delta"] == ["ok"]
    assert frames[-1]["payload"]["stop_reason"] == "end_turn"


async def test_only_listed_active_agents_run(tmp_path):
    agents = write_agents(
        tmp_path,
        {"plain": ("plain", PLAIN)},
        extra=f'\n[agents.off]\nkind = "script"\ncommand = ["{sys.executable}"]\nactive = false\n',
    )
    async with running_client(tmp_path, agents_file=agents) as client:
        _, body = await client.request("GET", "/v1/agents")
        assert {a["name"]: a["is_active"] for a in body["agents"]} == {"plain": True, "off": False}
        for name in ("off", "demo", sys.executable, "../plain"):
            made = await client.init(agent=name)
            assert (made["status"], made["body"]["error_code"]) == (403, "AGENT_NOT_ALLOWED")


@pytest.mark.parametrize(
    "text, problem",
    [
        ("not toml [", "not valid TOML"),
        ("[other]\nx = 1\n", "no [agents.NAME] tables"),
        (
            '[agents.a]\nkind = "rocket"\n',
            "[agents.a] kind: expected one of acp, claude-code, openai, script, got 'rocket'",
        ),
        ('[agents.a]\nkind = "script"\n', "[agents.a] command: missing, expected a non-empty list"),
        (
            '[agents.a]\nkind = "script"\ncommand = []\n',
            "[agents.a] command: expected a non-empty list of strings (or one string), got []",
        ),
        (
            '[agents.a]\nkind = "script"\ncommand = ["x"]\nmode = "xml"\n',
            "[agents.a] mode: expected one of plain, jsonl, got 'xml'",
        ),
        (
            '[agents.a]\nkind = "script"\ncommand = ["x"]\nenv = { A = 1 }\n',
            "[agents.a] env: expected a table of strings, got {'A': 1}",
        ),
        ('[agents.a]\nkind = "script"\ncommand = ["x"]\n[[agents.a.tools]]\nnope = 1\n', "name"),
    ],
)
def test_agents_file_errors_say_where_and_why(tmp_path, text, problem):
    file = tmp_path / "agents.toml"
    file.write_text(text)
    with pytest.raises(AgentsFileError, match=re.escape(problem)):
        load_agents(file)


def test_agents_file_tools_are_never_direct(tmp_path):
    file = tmp_path / "agents.toml"
    file.write_text(
        '[agents.a]\nkind = "script"\ncommand = "bin/run --fast"\n'
        '[[agents.a.tools]]\nname = "Bash"\ncategory = "execute"\ndirect = true\n'
    )
    spec = load_agents(file)["a"]
    assert spec.settings.command == ["bin/run", "--fast"]  # split once, when loaded
    assert [(t.name, t.direct) for t in spec.tools] == [("Bash", False)]


def test_a_bad_agents_file_stops_rawp_client_with_a_message(tmp_path, processes):
    file = tmp_path / "agents.toml"
    file.write_text("not toml [")
    proc = processes.rawp(
        "client",
        "--dev",
        "--agents-file",
        str(file),
        "--state-dir",
        str(tmp_path / "state"),
        "--port",
        "0",
    )
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert b"not valid TOML" in out and b"Traceback" not in out


async def test_deleting_an_idle_session_is_immediate_and_leaves_nothing(tmp_path):
    async with running_client(tmp_path) as client:
        sid, ws = await client.start_session()
        await recv(ws)
        status, _ = await client.request("DELETE", f"/v1/session/{sid}")
        assert status == 204
        closed = await asyncio.wait_for(ws.wait_closed(), 10)
        assert closed is None and ws.close_code is not None


async def test_an_agent_that_cannot_start_fails_its_turn_with_a_reason(tmp_path):
    agents = tmp_path / "agents.toml"
    agents.write_text('[agents.ghost]\nkind = "script"\ncommand = ["/nonexistent/agent"]\n')
    async with running_client(tmp_path, agents_file=agents) as client:
        sid, ws = await client.start_session(agent="ghost")
        await recv(ws), await recv(ws)
        await ws.send(frame("control.prompt.request", {"prompt_text": "go"}, sid))
        frames = await recv_until(ws, "session.turn.end")
    error = next(f for f in frames if f["type"] == "agent.error")["payload"]
    assert error["code"] == "AGENT_START_FAILED" and "ghost" in error["message"]
    assert frames[-1]["payload"]["stop_reason"] == "error"


async def test_stopping_rawp_client_ends_its_agents(tmp_path, processes):
    port, state = free_port(), tmp_path / "state"
    token = ClientAuth(StateDir.open(state), 60).issue().access_token
    proc = processes.rawp(
        "client",
        "--dev",
        "--port",
        str(port),
        "--state-dir",
        str(state),
        "--allow-root",
        str(tmp_path),
        env={"RAWP_DEMO_PAUSE": "30"},
    )
    base = f"http://127.0.0.1:{port}"
    sid, ticket = new_id(), new_secret()
    async with aiohttp.ClientSession() as http:
        for _ in range(300):
            try:
                async with http.get(f"{base}/v1/health"):
                    break
            except aiohttp.ClientConnectorError:
                assert proc.poll() is None
                await asyncio.sleep(0.05)
        body = {
            "session_id": sid,
            "ticket": ticket,
            "agent_name": "demo",
            "workspace_path": str(tmp_path),
        }
        headers = {"Authorization": f"Bearer {token}"}
        async with http.post(f"{base}/v1/session/init", json=body, headers=headers) as resp:
            assert resp.status == 201
    url = f"ws://127.0.0.1:{port}/v1/ws/stream?ticket={ticket}&session_id={sid}"
    async with connect(url, subprotocols=["rawp-dps-1.0"]) as ws:
        await recv(ws), await recv(ws)
        await ws.send(frame("control.prompt.request", {"prompt_text": "slow"}, sid))
        await recv_until(ws, "agent.thinking.delta")
        agents = psutil.Process(proc.pid).children(recursive=True)
        assert any("demo-agent" in " ".join(p.cmdline()) for p in agents)
        proc.terminate()
        await asyncio.to_thread(proc.wait, 30)
    assert proc.returncode == 0
    for agent in agents:
        await eventually_gone(agent.pid)


async def test_a_prompt_with_a_nul_is_refused_for_every_kind_and_runs_nothing(tmp_path):
    # The openai agent's endpoint is a closed port: refused before any request is made.
    agents = write_agents(
        tmp_path,
        {"plain": ("plain", PLAIN)},
        extra=f'\n[agents.llm]\nkind = "openai"\nbase_url = "http://127.0.0.1:{free_port()}/v1"'
        '\nmodel = "m"\n',
    )
    async with running_client(tmp_path, agents_file=agents) as client:
        for agent in ("llm", "plain"):
            sid, ws = await client.start_session(agent=agent)
            await recv(ws), await recv(ws)
            for text in ("nul \x00 here", "see <@file:a|a\x00b>"):
                refs = [{"ref_id": "a", "path": "a.txt", "display_path": "a\x00b"}]
                request = frame(
                    "control.prompt.request",
                    {"prompt_text": text, "file_references": refs},
                    sid,
                )
                await ws.send(request)
                frames = await recv_until(ws, "session.error")
                assert [f["type"] for f in frames] == ["session.error"]  # no turn started
                error = frames[0]["payload"]
                assert error["code"] == "INVALID_PROMPT" and "NUL" in error["message"]
                assert error["ref_message_id"] == orjson.loads(request)["message_id"]
        # The (plain) session is still usable: its next prompt runs.
        await ws.send(frame("control.prompt.request", {"prompt_text": "fine"}, sid))
        frames = await recv_until(ws, "session.turn.end")
        assert any("env: fine plain" in f["payload"].get("text", "") for f in frames)
