"""Agents found on PATH (issue 28 §5): without an agents file the client offers, beside `demo`,
each known agent CLI whose program is on PATH, configured as its agents-file table would be;
`rawp up --agent claude` runs the real Claude Code CLI against the fake Anthropic API; an
unknown name says what is available and how to add one; `rawp doctor` shows what was found."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from client.agents import load_agents
from client.agents.discover import KNOWN_AGENTS, find_program, resolve_name
from tests.agents.conftest import model_env
from tests.agents.fake_anthropic import FakeAnthropic, Turn, text
from tests.client.harness import running_client
from tests.support import ROOT, free_port

NO_PLATFORMS = {"DISCORD_BOT_TOKEN": "", "SLACK_BOT_TOKEN": "", "RAWP_PLATFORM": ""}


def programs(folder: Path, *names: str, executable: bool = True) -> Path:
    """Stand-in programs: files on PATH are all discovery looks at (nothing is run)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text("#!/bin/sh\nexit 0\n")
        (folder / name).chmod(0o755 if executable else 0o644)
    return folder


@pytest.fixture
def on_path(tmp_path, monkeypatch):
    """PATH with claude, gemini and opencode; codex-acp there but not executable; and a
    `claude-code-acp` only in a relative PATH entry (the current directory)."""
    found = programs(tmp_path / "bin", "claude", "gemini", "opencode")
    programs(tmp_path / "bin", "codex-acp", executable=False)
    here = programs(tmp_path / "workspace", "claude-code-acp")
    monkeypatch.chdir(here)
    monkeypatch.setenv("PATH", os.pathsep.join([".", "", str(found), "/usr/bin", "/bin"]))
    return found


def test_the_known_clis_on_path_are_offered_with_their_agents_file_defaults(on_path, tmp_path):
    agents = load_agents(None)
    assert list(agents) == ["demo", "claude-code", "gemini", "opencode"]
    # The same objects an agents file holding these tables gives: one reader, one set of
    # defaults (Claude Code asks before each tool as its CLI does: no mode, no allowed tools).
    table = tmp_path / "agents.toml"
    table.write_text(
        f'[agents.claude-code]\nkind = "claude-code"\ncommand = ["{on_path}/claude"]\n'
        'description = "Claude Code (claude found on PATH)"\n'
        f'[agents.gemini]\nkind = "acp"\ncommand = ["{on_path}/gemini", "--experimental-acp"]\n'
        'description = "Gemini CLI (gemini found on PATH)"\n'
        'install_hint = "npm install -g @google/gemini-cli"\n'
        f'[agents.opencode]\nkind = "acp"\ncommand = ["{on_path}/opencode", "acp"]\n'
        'description = "OpenCode (opencode found on PATH)"\n'
        'install_hint = "npm install -g opencode-ai"\n'
    )
    from_file = load_agents(table)
    for name, spec in from_file.items():
        assert agents[name] == spec
    claude = agents["claude-code"].settings
    assert claude.permission_mode is None and claude.allowed_tools == []


# A PATH entry: one of the prepared folders, by absolute or relative spelling, or noise.
ENTRIES = st.sampled_from(["has", "not-exec", "absent", "empty"]).flatmap(
    lambda name: st.sampled_from([("abs", name), ("rel", name)])
) | st.sampled_from([("raw", ""), ("raw", "."), ("raw", "::"), ("raw", "/nonexistent")])


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(ENTRIES, max_size=8))
def test_a_program_is_found_only_in_an_absolute_folder_where_it_runs(tmp_path, entries):
    programs(tmp_path / "has", "claude")
    programs(tmp_path / "not-exec", "claude", executable=False)
    (tmp_path / "empty").mkdir(exist_ok=True)
    cwd = os.getcwd()
    os.chdir(tmp_path)  # a relative entry names a real folder holding `claude`
    try:
        spelled = [str(tmp_path / value) if how == "abs" else value for how, value in entries]
        found = find_program("claude", os.pathsep.join(spelled))
    finally:
        os.chdir(cwd)
    wanted = str(tmp_path / "has" / "claude") if ("abs", "has") in entries else None
    assert found == wanted


def test_a_typed_name_picks_the_agent_by_name_alias_or_kind(on_path):
    agents = load_agents(None)
    assert resolve_name("claude", agents) == "claude-code"
    assert resolve_name("claude-code", agents) == "claude-code"
    assert resolve_name("gemini-cli", agents) == "gemini"
    assert resolve_name("script", agents) == "demo"  # the one agent of that kind
    assert resolve_name("acp", agents) is None  # two of that kind: ambiguous
    assert resolve_name("codex", agents) is None  # its program is not executable here


async def test_the_client_lists_the_agents_found(on_path, tmp_path):
    async with running_client(tmp_path) as client:
        status, body = await client.request("GET", "/v1/agents")
    assert status == 200
    assert [a["name"] for a in body["agents"]] == ["demo", "claude-code", "gemini", "opencode"]


def test_rawp_client_says_which_agents_it_offers(tmp_path, processes):
    found = programs(tmp_path / "bin", "opencode")
    proc = processes.rawp(
        "client", "--dev", "--port", str(free_port()), "--state-dir", str(tmp_path / "state"),
        env={"PATH": os.pathsep.join([str(found), os.environ["PATH"]]), "RAWP_AGENTS_FILE": ""},
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    first = proc.stdout.readline().decode()
    assert first == "rawp client offers the agents: demo, opencode\n"
    assert proc.stdout.readline().decode().startswith("rawp client listening on")


def rawp(
    *args: str, env: dict[str, str], cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rawp_app.cli", *args],
        input=stdin, capture_output=True, text=True, timeout=240,
        env={**os.environ, **NO_PLATFORMS, **env}, cwd=cwd,
    )  # fmt: skip


def test_an_unknown_agent_name_lists_the_available_ones_and_how_to_add_one(tmp_path):
    found = programs(tmp_path / "bin", "claude")
    env = {"PATH": os.pathsep.join([str(found), os.environ["PATH"]])}
    state = ["--state-dir", str(tmp_path / "state")]
    done = rawp("up", "--agent", "nope", *state, env=env, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "no agent 'nope' here; available: demo, claude-code (or claude)" in done.stderr
    assert "gemini" in done.stderr and "--agents-file (docs/agents.md)" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""

    agents = tmp_path / "agents.toml"
    agents.write_text('[agents.tests]\nkind = "script"\ncommand = ["true"]\n')
    done = rawp(
        "up", "--agent", "claude", "--agents-file", str(agents), *state, env=env, cwd=tmp_path
    )
    assert done.returncode == 2
    assert f"no agent 'claude' in the agents file {agents}; available: tests" in done.stderr
    assert f"add an [agents.claude] table to {agents}" in done.stderr


def test_doctor_shows_the_agents_found_on_path(tmp_path):
    found = programs(tmp_path / "bin", "claude", "gemini")
    env = {"PATH": os.pathsep.join([str(found), "/usr/bin", "/bin"]), "RAWP_AGENTS_FILE": ""}
    master = f"http://127.0.0.1:{free_port()}"  # nothing there: only the agent lines matter
    done = rawp("doctor", "--master-url", master, env=env, cwd=ROOT)
    lines = done.stdout.splitlines()
    assert "✅ agent 'demo' (script, no agents file: built in): " + sys.executable in lines
    assert (
        f"✅ agent 'claude-code' (claude-code, no agents file: found on PATH): {found}/claude"
        in lines
    )
    assert f"✅ agent 'gemini' (acp, no agents file: found on PATH): {found}/gemini" in lines
    missing = [line for line in lines if "not found on PATH, offered once installed" in line]
    assert (
        len(missing) == 1 and "codex-acp (npm install -g @zed-industries/codex-acp)" in missing[0]
    )
    assert "claude-code (" not in missing[0]
    assert {k.name for k in KNOWN_AGENTS} == {
        "claude-code",
        "gemini",
        "claude-code-acp",
        "codex-acp",
        "opencode",
    }


@pytest.mark.parametrize("typed", ["claude", "claude-code"])
async def test_rawp_up_runs_the_real_claude_found_on_path(typed, tmp_path, node_agents):
    workspace = tmp_path / "project"
    workspace.mkdir()
    async with FakeAnthropic() as fake:
        fake.script.append(Turn([text("Hello from the fake model")]))
        env = {
            **model_env(fake.base_url, tmp_path / "home"),
            "PATH": os.pathsep.join([str(node_agents.claude.parent), os.environ["PATH"]]),
        }
        done = await asyncio.to_thread(
            rawp, "up", "--agent", typed, "--state-dir", str(tmp_path / "state"), "--no-web",
            env=env, cwd=workspace, stdin="hi there\n",
        )  # fmt: skip
        assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        assert "▶️ claude-code on" in done.stdout
        assert (
            "rawp up: agent 'claude-code'; also here: demo (--agent NAME picks one)" in done.stderr
        )
        assert "Hello from the fake model" in done.stdout
        assert "✅ done" in done.stdout and "AGENT_NOT_ALLOWED" not in done.stdout
        # The prompt reached the model through the real CLI.
        assert "hi there" in json.dumps(fake.main_requests()[0]["messages"])


async def test_rawp_up_runs_the_real_claude_code_acp_adapter_found_on_path(tmp_path, node_agents):
    """An ACP agent found on PATH: the adapter's npm bin, run as `claude-code-acp`."""
    found = tmp_path / "bin"
    found.mkdir()
    (found / "claude-code-acp").symlink_to(node_agents.acp[1])
    workspace = tmp_path / "project"
    workspace.mkdir()
    async with FakeAnthropic() as fake:
        fake.script.append(Turn([text("Hello from ACP")]))
        env = {
            **model_env(fake.base_url, tmp_path / "home"),
            "PATH": os.pathsep.join([str(found), os.environ["PATH"]]),
        }
        done = await asyncio.to_thread(
            rawp, "up", "--agent", "claude-code-acp", "--state-dir", str(tmp_path / "state"),
            "--no-web", env=env, cwd=workspace, stdin="hi from acp\n",
        )  # fmt: skip
        assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        assert "▶️ claude-code-acp on" in done.stdout
        assert "Hello from ACP" in done.stdout and "✅ done" in done.stdout
        assert "hi from acp" in json.dumps(fake.main_requests()[0]["messages"])
