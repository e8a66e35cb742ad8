"""`rawp up` as a newcomer runs it: one process, prompts piped in, turns printed, exit 0.

The command is the README's (`rawp up`, run as `python -m rawp_app.cli up` like every process test),
started in an empty directory with no platform tokens, so the console platform is used.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import psutil

from client.demo_agent import answer_text
from gateway.rendering.chunker import split_markdown
from tests.support import Processes

NO_PLATFORMS = {"DISCORD_BOT_TOKEN": "", "SLACK_BOT_TOKEN": "", "RAWP_PLATFORM": ""}
LONG_PROMPT = "write something long"
APPROVE_PROMPT = "please approve this"


def fences_balanced(chunk: str) -> bool:
    return sum(1 for line in chunk.splitlines() if line.startswith("```")) % 2 == 0


def run_up(processes: Processes, tmp_path, stdin: str, *extra: str) -> tuple[int, str, str]:
    workspace = tmp_path / "project"
    workspace.mkdir(exist_ok=True)
    (workspace / "main.py").write_text("print('hello')\n")
    proc = processes.rawp(
        "up", "--state-dir", str(tmp_path / "state"), *extra,
        env=NO_PLATFORMS, cwd=workspace,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = proc.communicate(stdin.encode(), timeout=180)
    return proc.returncode, out.decode(), err.decode()


def agents_running_in(path, but: int | None = None) -> list[str]:
    """Command lines of processes working in `path` (the agent's cwd is the workspace)."""
    left = []
    for process in psutil.process_iter(["cmdline", "cwd"]):
        if process.pid == but:
            continue
        try:
            if process.info["cwd"] and str(path) in process.info["cwd"]:
                left.append(" ".join(process.info["cmdline"] or []))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return left


def test_two_piped_prompts_print_both_turns_and_exit_zero(processes, tmp_path):
    code, out, err = run_up(processes, tmp_path, f"{LONG_PROMPT}\n{APPROVE_PROMPT}\n1\n")
    assert code == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert "development mode (--dev) on loopback" in err
    assert "▶️ demo on" in out

    # Turn 1: the tool line, then the long answer sent as several messages, each within the
    # limit with its code fences balanced, printed one after the other.
    first_tool = out.index("✅ Edit (")
    chunks = split_markdown(answer_text(LONG_PROMPT, [], "text"), 2000)
    assert len(chunks) >= 3
    assert all(len(c) <= 2000 and fences_balanced(c) for c in chunks)
    long_at = out.index("\n".join(chunks))
    assert first_tool < long_at
    assert "## Part 9" in out and "```python" in out

    # Turn 2: the numbered approval prompt, answered "1" from stdin, and the agent's report.
    question = out.index("❓ Apply the change to the workspace?", long_at)
    assert "  [1] Allow once\n  [2] Deny\n" in out[question:]
    answered = out.index("Answered: Allow once", question)
    reported = out.index("You chose: allow", answered)
    assert out.index(f'You said: "{APPROVE_PROMPT}"') > reported
    assert out.count("✅ done") == 2
    assert agents_running_in(tmp_path / "project") == []  # the agent ended with the session


def test_a_second_run_reuses_the_state_and_the_flags_choose_the_workspace(processes, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "notes.md").write_text("# notes\n")
    first = run_up(processes, tmp_path, "hello\n")
    assert first[0] == 0, first
    code, out, err = run_up(processes, tmp_path, "and again\n", "--workspace", str(other))
    assert code == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert f"in {other}" in err
    assert 'You said: "and again"' in out
    assert (tmp_path / "state" / "master").is_dir() and (tmp_path / "state" / "client").is_dir()


def test_empty_input_ends_the_session_at_once(processes, tmp_path):
    code, out, err = run_up(processes, tmp_path, "")
    assert code == 0, err
    assert "▶️ demo on" in out and "You said" not in out


def test_a_missing_workspace_is_a_clear_error(processes, tmp_path):
    code, _, err = run_up(processes, tmp_path, "", "--workspace", str(tmp_path / "nope"))
    assert code == 2
    assert "no such directory" in err and "Traceback" not in err


def test_file_completion_and_agent_commands_in_the_console(processes, tmp_path):
    # The state dir inside the workspace, as with the default `.rawp`: its keys must not be
    # offered by the file search.
    state_inside = tmp_path / "project" / ".rawp"
    stdin = "hello\n/\nexplain @main\n1\nshow @master\n/review\n"
    code, out, err = run_up(processes, tmp_path, stdin, "--state-dir", str(state_inside))
    assert code == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert "/review — Review the working tree" in out  # `/` lists the published commands
    assert "/explain <path> — Explain a file" in out
    assert "@main:\n  [1] main.py\n" in out  # `@` asks control.file.search, pick by number
    assert 'You said: "explain main.py"' in out  # the token, as the script agent reads it
    assert "Referenced files:\n- main.py" in out
    assert 'You said: "show @master"' in out  # nothing found: kept as typed text
    assert "master-signing-key" not in out
    assert "Ran the slash command /review." in out  # sent as input_type slash_command
    assert out.count("✅ done") == 4


def test_sigterm_mid_turn_ends_the_agent_and_exits_zero(processes, tmp_path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    proc = processes.rawp(
        "up", "--state-dir", str(tmp_path / "state"),
        env=NO_PLATFORMS, cwd=workspace,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    proc.stdin.write(b"please approve this\n")  # the agent waits for an answer that never comes
    proc.stdin.flush()
    seen = ""
    while "Answer with a number" not in seen:
        line = proc.stdout.readline().decode()
        assert line, f"rawp up ended early:\n{seen}"
        seen += line
    waiting = agents_running_in(workspace, but=proc.pid)
    assert any("demo-agent" in line for line in waiting), waiting  # alive, waiting
    proc.terminate()
    assert proc.wait(timeout=60) == 0
    assert agents_running_in(workspace) == []


STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
    stdin=subprocess.DEVNULL)
open(os.environ["MARKER"] + ".tmp", "w").write(f"{os.getpid()} {child.pid}")
os.rename(os.environ["MARKER"] + ".tmp", os.environ["MARKER"])
while True:
    time.sleep(0.05)
"""


def test_sigkill_mid_turn_leaves_no_agent_within_five_seconds(processes, tmp_path):
    """Issue 14 §3: `rawp up` runs the client in-process; killed outright, its agent and the
    agent's own children go too, though they ignore SIGTERM and stdin closing."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    script, marker = tmp_path / "stubborn.py", tmp_path / "pids"
    script.write_text(STUBBORN)
    agents = tmp_path / "agents.toml"
    agents.write_text(
        f'[agents.stubborn]\nkind = "script"\nmode = "jsonl"\n'
        f'command = ["{sys.executable}", "{script}"]\nenv = {{ MARKER = "{marker}" }}\n'
    )
    proc = processes.rawp(
        "up", "--state-dir", str(tmp_path / "state"), "--agents-file", str(agents),
        "--agent", "stubborn",
        env=NO_PLATFORMS, cwd=workspace,
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    proc.stdin.write(b"go\n")
    proc.stdin.flush()
    started = time.monotonic()
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() - started < 60, "no agent started"
        time.sleep(0.02)
    pids = [int(pid) for pid in marker.read_text().split()]
    assert all(psutil.pid_exists(pid) for pid in pids)
    proc.kill()
    killed = time.monotonic()
    try:
        while left := [pid for pid in pids if running(pid)]:
            assert time.monotonic() - killed < 5.0, left
            time.sleep(0.02)
    finally:
        for pid in pids:  # a failing run leaves nothing either
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=10)


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_an_agent_the_machine_does_not_have_is_a_clear_error(processes, tmp_path):
    code, _, err = run_up(processes, tmp_path, "hello\n", "--agent", "nope")
    assert code == 2
    # Said before anything starts (issue 28 §5), with what is available and how to add one;
    # tests/agents/test_discovery.py has the agents found on PATH.
    assert "no agent 'nope' here; available: demo" in err and "--agents-file" in err
    assert "development mode" not in err and "Traceback" not in err


def test_an_agents_file_with_a_wrong_type_is_one_line_not_a_traceback(processes, tmp_path):
    """The agents file is validated once (client.agents.kinds): `rawp up` says what `rawp
    client` says, in one line naming the agent, the field and what it accepts, and exits 2."""
    agents = tmp_path / "agents.toml"
    agents.write_text('[agents.coder]\nkind = "script"\ncommand = 5\n')
    code, _, err = run_up(processes, tmp_path, "hello\n", "--agents-file", str(agents))
    assert code == 2
    assert "Traceback" not in err
    assert "[agents.coder] command: expected a non-empty list of strings" in err


def test_an_unanswered_approval_is_denied_at_the_configured_timeout(processes, tmp_path):
    """Issue 15 §4: the input stays open and says nothing; after --approval-timeout the gateway
    answers with the deny option, the console says so, and the agent goes on with it."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    proc = processes.rawp(
        "up", "--state-dir", str(tmp_path / "state"), "--approval-timeout", "2",
        env=NO_PLATFORMS, cwd=workspace,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    proc.stdin.write(b"please approve this\n")
    proc.stdin.flush()
    seen = ""
    while "You chose: deny" not in seen:
        line = proc.stdout.readline().decode()
        assert line, f"rawp up ended early:\n{seen}"
        seen += line
    assert "⏱ No answer in 2 s — denied." in seen
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
