"""The README's self-host steps, one process each, on loopback with `--dev`:

RAWP_EDGE_SECRET=… rawp master --dev
rawp master --dev pairing-url --user console:local    → a pairing URL
rawp client --dev pair '<url>' && rawp client --dev
RAWP_EDGE_SECRET=… rawp gateway --platform console     → one turn from stdin
"""

from __future__ import annotations

import subprocess
import urllib.request

import orjson

from tests.edge.stack import read_until
from tests.support import free_port, wait_for_http

SECRET = "self-host-edge-secret-0123456789abcdef"


def test_master_client_and_console_gateway_as_three_processes(processes, tmp_path):
    master_port, client_port = free_port(), free_port()
    master_url = f"http://127.0.0.1:{master_port}"
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "app.py").write_text("print('hi')\n")
    master_flags = ["--dev", "--port", str(master_port), "--state-dir", str(tmp_path / "master")]
    client_flags = ["--dev", "--port", str(client_port), "--state-dir", str(tmp_path / "client")]

    master = processes.rawp("master", *master_flags, env={"RAWP_EDGE_SECRET": SECRET})
    wait_for_http(f"{master_url}/v1/edge/nodes", proc=master, timeout=60)

    pairing = subprocess.run(
        [*_rawp(), "master", *master_flags, "pairing-url", "--user", "console:local"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    url = pairing.stdout.strip().splitlines()[-1]
    assert url.startswith(f"{master_url}/v1/auth/pair?token=")

    paired = subprocess.run(
        [*_rawp(), "client", *client_flags, "pair", url, "--name", "laptop"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert paired.returncode == 0, paired.stdout + paired.stderr
    client = processes.rawp("client", *client_flags, "--allow-root", str(workspace))
    read_until(client, "config synced with the master")

    gateway = processes.rawp(
        "gateway", "--platform", "console", "--master-url", master_url,
        "--state-dir", str(tmp_path / "gateway"),
        env={"RAWP_EDGE_SECRET": SECRET}, stdin=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = gateway.communicate(b"fix the bug\n", timeout=120)
    out, err = out.decode(), err.decode()
    assert gateway.returncode == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert "▶️ demo on laptop" in out
    assert out.index("⋯ typing…") < out.index("✅ Edit (") < out.index('You said: "fix the bug"')
    assert out.rstrip().endswith("✅ done")
    assert (tmp_path / "gateway" / "conversations.sqlite3").is_file()
    assert _open_sessions(master_url) == []  # the gateway ended its session on the way out

    # A console whose session is ended elsewhere says so and exits 1.
    again = processes.rawp(
        "gateway", "--platform", "console", "--master-url", master_url,
        "--state-dir", str(tmp_path / "gateway"),
        env={"RAWP_EDGE_SECRET": SECRET}, stdin=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    greeting = again.stdout.readline().decode()
    assert greeting.startswith("▶️ demo on laptop"), greeting
    [session] = _open_sessions(master_url)
    _call(master_url, "DELETE", f"/v1/edge/sessions/{session['session_id']}")
    # stdin stays open: the session's end is what ends the gateway
    assert again.wait(timeout=60) == 1
    assert "This session has ended" in again.stdout.read().decode()


def test_the_gateway_without_the_edge_secret_says_what_to_set(processes):
    gateway = processes.rawp("gateway", "--platform", "console", env={"RAWP_EDGE_SECRET": ""})
    out, _ = gateway.communicate(timeout=60)
    assert gateway.returncode == 2
    assert b"RAWP_EDGE_SECRET" in out and b"Traceback" not in out


def _rawp() -> list[str]:
    import sys

    return [sys.executable, "-m", "rawp_app.cli"]


def _call(master_url: str, method: str, path: str):
    """One Edge API call as console:local (the user the README's console runs as)."""
    token_request = urllib.request.Request(
        f"{master_url}/v1/edge/auth/token",
        data=orjson.dumps({"subject": "console:local"}),
        headers={"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(token_request, timeout=10) as answer:
        token = orjson.loads(answer.read())["access_token"]
    request = urllib.request.Request(
        master_url + path, method=method, headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        raw = answer.read()
        return orjson.loads(raw) if raw else None


def _open_sessions(master_url: str) -> list:
    return _call(master_url, "GET", "/v1/edge/sessions")["sessions"]
