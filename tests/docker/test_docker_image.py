"""The README's Docker steps, run for real (issue 17 §4): the image is built, and a master and
a gateway run the way the README says — a user-defined network, the master with a volume, a
restart policy and the `.env` made by copying `.env.example`, its port published on loopback,
the gateway started right after it in a container on the same network, logging in to the fake
Discord (on the network's host address) and answering `/rawp pair` through the master. The
master's `/v1/health` answers through the published port, both run as the non-root user, a
token issued before the master's container is re-created still works after (its signing key
and database are in the volume), and `up` answers a piped prompt with `-i` and refuses, saying
so, without it.

Where no Docker engine answers and none can be started (shared/tools/docker-engine), the test
is skipped with the reason printed. Cost: one `docker build` (cached layers after the first),
the containers started side by side; about 20 s warm on two cores (docs/operations-docker.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.docker.engine import build_image, docker, ensure_base_image, get_engine
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.support import ROOT, apt_install, free_port, wait_for_http

IMAGE = "rawp-test"  # kept between runs: its layers are the next build's cache
PUBLIC_URL = "https://rawp.example.com"
EDGE_SECRET = secrets.token_hex(32)


@pytest.fixture(scope="module")
def image():
    engine, why = get_engine()
    if engine is None:
        print(f"\nskipping the Docker tests: {why}")
        pytest.skip(why)
    try:
        ensure_base_image(engine)
        print(f"\ndocker build: {build_image(IMAGE):.1f} s")  # README: docker build -t rawp .
        yield IMAGE
    finally:
        engine.stop()


def dotenv(path: Path, values: dict[str, str]) -> None:
    """README: `cp .env.example .env`, then fill in the secret and the platform settings (a
    commented-out line, `# NAME=default`, is uncommented as an operator would)."""
    lines = (ROOT / ".env.example").read_text().splitlines()
    for name, value in values.items():
        pattern = re.compile(rf"^(# ?)?{name}=.*$")
        at = [i for i, line in enumerate(lines) if pattern.match(line)]
        assert at, f".env.example has no {name}= line"
        lines[at[0]] = f"{name}={value}"
    path.write_text("\n".join(lines) + "\n")


def http_json(url: str, body: dict | None = None, token: str | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode())
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"{}")


def container_state(name: str) -> dict:
    return json.loads(docker("inspect", "--format", "{{json .State}}", name))


def container_logs(name: str) -> str:
    return subprocess.run(
        ["docker", "logs", "--tail", "40", name],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30,
    ).stdout  # fmt: skip


def healthcheck(name: str) -> int:
    """Run the image's HEALTHCHECK command in the container now (Docker would first wait
    its 30 s interval); its exit code."""
    test = json.loads(docker("inspect", "--format", "{{json .Config.Healthcheck.Test}}", name))
    assert test[0] == "CMD", test
    return subprocess.run(["docker", "exec", name, *test[1:]], timeout=30).returncode


def wait_for_log(name: str, needle: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while needle not in (logs := container_logs(name)):
        assert time.monotonic() < deadline, f"{name} never logged {needle!r}:\n{logs}"
        time.sleep(0.2)


def restarts(name: str) -> int:
    return int(docker("inspect", "--format", "{{.RestartCount}}", name))


async def auid(name: str) -> str:
    return (await adocker("exec", name, "id", "-u")).strip()


def start_up_runs(image: str) -> tuple[subprocess.Popen, subprocess.Popen]:
    """`rawp up` in the image, side by side with the rest: with -i it answers the piped prompt;
    without -i (stdin is /dev/null) it says it needs -i, not exit 0 having done nothing."""
    piped = subprocess.Popen(
        ["docker", "run", "-i", "--rm", image, "up"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    piped.stdin.write(b"hello\n")
    piped.stdin.close()
    detached = subprocess.Popen(
        ["docker", "run", "--rm", image, "up"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return piped, detached


async def adocker(*args: str, **kw) -> str:
    """`docker` off the event loop: the fake Discord serves the gateway meanwhile."""
    return await asyncio.to_thread(docker, *args, **kw)


async def test_the_readmes_docker_steps(image, tmp_path):
    up_piped, up_detached = start_up_runs(image)
    try:
        await readme_steps(image, tmp_path)
        await asyncio.to_thread(compose_steps, image, tmp_path)
    finally:
        for up in (up_piped, up_detached):
            if up.poll() is None and up.returncode is None:
                try:
                    up.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    up.kill()
    out = up_piped.stdout.read().decode()
    assert up_piped.returncode == 0, up_piped.stderr.read().decode()
    assert 'You said: "hello"' in out and "✅ done" in out, out
    assert up_detached.returncode == 2
    assert up_detached.stdout.read() == ""
    assert "`-i`" in up_detached.stderr.read()


async def readme_steps(image: str, tmp_path: Path) -> None:
    run = secrets.token_hex(3)
    network, master, gateway = f"rawp-{run}", f"rawp-master-{run}", f"rawp-gateway-{run}"
    loopback = f"rawp-loopback-{run}"
    volumes = [f"rawp-master-{run}", f"rawp-gateway-{run}"]
    port = free_port()
    master_run = [
        "run", "-d", "--name", master, "--network", network, "--restart", "unless-stopped",
        "-p", f"127.0.0.1:{port}:8700", "-v", f"{volumes[0]}:/data", "--env-file",
        str(tmp_path / ".env"), "-e", f"RAWP_MASTER_PUBLIC_URL={PUBLIC_URL}", image,
    ]  # fmt: skip
    gateway_run = [
        "run", "-d", "--name", gateway, "--network", network, "--restart", "unless-stopped",
        "-v", f"{volumes[1]}:/data", "--env-file", str(tmp_path / ".env"),
        "-e", f"RAWP_MASTER_URL=http://{master}:8700",
        "-e", f"RAWP_HEALTHCHECK_URL=http://{master}:8700/v1/health", image, "gateway",
    ]  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    await adocker("network", "create", network)
    try:
        ipam = "{{(index .IPAM.Config 0).Gateway}}"
        host = (await adocker("network", "inspect", "--format", ipam, network)).strip()
        world = DiscordWorld()
        async with FakeDiscord(world, host=host) as fake:
            dotenv(
                tmp_path / ".env",
                {
                    "RAWP_EDGE_SECRET": EDGE_SECRET,
                    "DISCORD_BOT_TOKEN": world.bot_token,
                    "DISCORD_API_BASE_URL": fake.api_base_url,
                    "DISCORD_GATEWAY_URL": fake.gateway_url,
                },
            )
            # The gateway right after the master: it waits for the master to listen.
            await adocker(*master_run)
            await adocker(*gateway_run)
            # Beside them, the mistake the issue found: a master told to listen on loopback
            # (RAWP_MASTER_HOST=127.0.0.1) cannot be reached through -p, and is unhealthy.
            await adocker(
                "run", "-d", "--name", loopback, "--network", network,
                "-e", f"RAWP_EDGE_SECRET={EDGE_SECRET}", "-e", "RAWP_MASTER_HOST=127.0.0.1", image,
            )  # fmt: skip
            await asyncio.to_thread(wait_for_http, base + "/v1/health", 60)
            status, health = await asyncio.to_thread(http_json, base + "/v1/health")
            assert (status, health["status"]) == (200, "online"), health
            assert await auid(master) == await auid(gateway) == "10001"  # the image's non-root user

            # The gateway logged in to Discord after the master answered, with no restart.
            await fake.wait_for_call("PUT", "/applications/*/commands", timeout=90)
            await fake.wait_for_ready_client(timeout=60)
            pair = await fake.inject_slash_command("rawp", [{"type": 1, "name": "pair"}])
            webhook = f"/webhooks/{world.application_id}/{pair['token']}"
            answer = await fake.wait_for_call("POST", webhook, timeout=60)
            text = str((answer.body or {}).get("content"))
            assert "rawp client pair" in text and PUBLIC_URL in text, text
            assert await asyncio.to_thread(restarts, gateway) == 0
            assert (await asyncio.to_thread(container_state, gateway))["Running"]

            # The image's healthcheck: the master's own, and the gateway's at its master.
            assert await asyncio.to_thread(healthcheck, master) == 0
            assert await asyncio.to_thread(healthcheck, gateway) == 0
            await asyncio.to_thread(wait_for_log, loopback, "listening on http://127.0.0.1:8700")
            assert await asyncio.to_thread(healthcheck, loopback) == 1
            # `rawp doctor` in a container on the network, as the README shows: all ✅.
            checked = await adocker(
                "run", "--rm", "--network", network, "--env-file", str(tmp_path / ".env"),
                "-e", f"RAWP_MASTER_URL=http://{master}:8700", image, "doctor", "--no-agents",
            )  # fmt: skip
            assert "❌" not in checked and checked.count("✅") == 5, checked

            # State kept across re-creation: a token from the old container's key still works.
            status, issued = await asyncio.to_thread(
                http_json, base + "/v1/edge/auth/token", {"subject": "console:docker"},
                EDGE_SECRET,
            )  # fmt: skip
            assert status == 200, issued
            await adocker("rm", "-f", master)
            await adocker(*master_run)
            await asyncio.to_thread(wait_for_http, base + "/v1/health", 60)
            status, nodes = await asyncio.to_thread(
                http_json, base + "/v1/edge/nodes", None, issued["access_token"]
            )
            assert status == 200, nodes
    except BaseException:
        for name in (master, gateway):  # shown with the failure
            print(f"--- docker logs {name}\n{await asyncio.to_thread(container_logs, name)}")
        raise
    finally:
        await adocker("rm", "-f", master, gateway, loopback, check=False)
        await adocker("network", "rm", network, check=False)
        await adocker("volume", "rm", *volumes, check=False)


def compose_tool() -> list[str] | None:
    """Debian's docker-compose (1.29), else the compose plugin; installed with apt-get where
    neither is here (as the engine tool installs docker.io), so a fresh machine runs the compose
    tests too. None, and the reason printed, where that fails."""
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    why = apt_install("docker-compose")  # waits for one another worker is installing
    if why is not None or not shutil.which("docker-compose"):
        print(f"\ncompose: {why or 'apt-get installed no docker-compose'}")
        return None
    return ["docker-compose"]


def compose_steps(image: str, tmp_path: Path) -> None:
    """compose.yaml with the compose tool: it is valid, refuses to run without a database
    password, and creates master and gateway from the image with their restart policies and
    health checks. PostgreSQL and Redis images cannot be pulled on this kind of machine, so the
    whole stack is not started (docs/operations-docker.md); where no compose tool is installed
    this says so, and tests/docker/test_compose.py still reads the file."""
    tool = compose_tool()
    if tool is None:
        print("\ncompose: no compose tool here (apt-get install docker-compose)")
        return
    project = f"rawp-compose-{secrets.token_hex(3)}"
    env = {**os.environ, "RAWP_IMAGE": image, "RAWP_POSTGRES_PASSWORD": secrets.token_hex(16)}
    compose = [*tool, "-p", project, "-f", str(ROOT / "compose.yaml"),
               "--project-directory", str(tmp_path)]  # fmt: skip

    def run(*args: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([*compose, *args], capture_output=True, text=True, timeout=120, **kw)

    checked = run("config", "-q", env=env)
    assert checked.returncode == 0, checked.stderr
    unset = {k: v for k, v in env.items() if k != "RAWP_POSTGRES_PASSWORD"}
    refused = run("config", "-q", env=unset)
    assert refused.returncode != 0 and "RAWP_POSTGRES_PASSWORD" in refused.stderr
    try:
        made = run("up", "--no-start", "--no-deps", "--no-build", "master", "gateway", env=env)
        assert made.returncode == 0, made.stderr
        ids = run("ps", "-q", "master", "gateway", env=env).stdout.split()
        assert len(ids) == 2, ids
        for container in ids:
            config = json.loads(docker("inspect", container))[0]
            assert config["HostConfig"]["RestartPolicy"]["Name"] == "unless-stopped"
            assert config["Config"]["Healthcheck"]["Test"][0] == "CMD"
            assert config["Config"]["Image"] == image
    finally:
        run("down", "-v", env=env)
