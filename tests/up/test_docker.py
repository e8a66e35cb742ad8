"""The Dockerfile, checked without a Docker engine (tests/docker runs the image for real where
one can be had): what it copies exists, it runs as a non-root user on a slim base, its commands
exist and start, and its healthcheck command — run here as the image would run it — tells a
serving master from a dead or failing one."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from tests.support import ROOT, free_port, wait_for_http

DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined, current = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        current += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if not line.endswith("\\"):
            joined.append(current)
            current = ""
    return [(text.split(" ", 1)[0].upper(), text.split(" ", 1)[1]) for text in joined]


def of(kind: str) -> list[str]:
    return [args for instruction, args in instructions() if instruction == kind]


def healthcheck_argv() -> list[str]:
    (args,) = of("HEALTHCHECK")
    exec_form = args[args.index("CMD ") + 4 :]
    argv = json.loads(exec_form)
    assert argv[0] == "python"
    return [sys.executable, *argv[1:]]


def image_env() -> dict[str, str]:
    env = {}
    for args in of("ENV"):
        for pair in args.split():
            key, _, value = pair.partition("=")
            env[key] = value
    return env


def test_slim_non_root_with_rawp_as_the_entrypoint():
    assert all("-slim" in base for base in of("FROM"))
    (user,) = of("USER")
    assert user not in ("root", "0")
    assert json.loads(of("ENTRYPOINT")[0]) == ["rawp"]
    assert json.loads(of("CMD")[0]) == ["master"]
    assert of("EXPOSE") == [image_env()["RAWP_MASTER_PORT"]]


def test_what_it_copies_exists_and_is_not_ignored():
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for args in of("COPY"):
        if args.startswith("--from"):
            continue
        *sources, _ = args.split()
        for source in sources:
            assert (ROOT / source).exists(), source
            assert source not in ignored, source
    assert {".env", ".venv", ".git", "tests"} <= ignored  # secrets and bulk stay out


@pytest.mark.parametrize("command", ["master", "gateway", "up"])
def test_each_command_of_the_image_exists(command):
    shown = subprocess.run(
        [sys.executable, "-m", "rawp_app.cli", command, "--help"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "usage: rawp " + command in shown.stdout


def test_the_master_starts_with_the_images_settings_and_the_healthcheck_answers(
    processes, tmp_path
):
    env = image_env()
    port = free_port()
    env.update(
        RAWP_MASTER_HOST="127.0.0.1",  # 0.0.0.0 in the image; loopback in tests
        RAWP_MASTER_PORT=str(port),
        RAWP_MASTER_STATE_DIR=str(tmp_path / "data" / "master"),
        PATH=str(Path(sys.executable).parent) + ":/usr/bin:/bin",
    )
    master = processes.rawp("master", env=env)
    wait_for_http(f"http://127.0.0.1:{port}/v1/health", proc=master, timeout=60)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/health", timeout=10) as answer:
        assert json.loads(answer.read())["status"] == "online"  # the master's own health route
    healthy = subprocess.run(healthcheck_argv(), env=env, capture_output=True, timeout=30)
    assert healthy.returncode == 0, healthy.stderr
    assert (tmp_path / "data" / "master").is_dir()

    master.terminate()
    master.wait(timeout=30)
    dead = subprocess.run(healthcheck_argv(), env=env, capture_output=True, timeout=30)
    assert dead.returncode == 1


def test_the_healthcheck_fails_on_a_server_error():
    class Failing(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(500)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Failing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1/edge/nodes"
        result = subprocess.run(
            healthcheck_argv(), env={"RAWP_HEALTHCHECK_URL": url}, capture_output=True, timeout=30
        )
    finally:
        server.shutdown()
    assert result.returncode == 1
