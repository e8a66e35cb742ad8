"""compose.yaml brought up for real, as a self-hoster does (issue 34): `.env` copied from
`.env.example` with a PostgreSQL password holding @ % / : # ? + =, the master's port moved with
RAWP_PUBLISHED_PORT, `docker compose up -d`. Then:

- all four services become healthy, the master on PostgreSQL and Redis;
- `rawp master pairing-url` inside the master container prints a URL, and a real `rawp client`
  on this machine pairs with it (the call `rawp client pair` makes, at the published port: the
  URL's own host is the TLS proxy's) and serves it over TLS at a name the master resolves to
  this machine; a console gateway (the gateway service's image and settings, `compose run`)
  runs a session on it;
- state survives `docker compose restart master` and `down` / `up`;
- a stopped database and a wrong password are the one line of issue 34 §2.

One compose project for the module, brought up once; the image is built once (its layers are
the image test's cache). A test-only override file adds what the machine needs: the client's
certificate as the master's trust store and its name. Where PostgreSQL's and Redis's images
cannot be pulled, the docker-engine tool's stand-ins keep their interface. Skipped, with the
reason printed, only where no engine (or no compose tool) can run. 100–160 s warm on two
cores (docs/operations-docker.md).
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from tests.docker.engine import build_image, docker, ensure_base_image, get_engine
from tests.docker.test_docker_image import IMAGE, compose_tool, dotenv, http_json
from tests.edge.stack import read_until
from tests.support import ROOT, Processes, free_port, self_signed_certificate

EDGE_SECRET = secrets.token_hex(32)
PASSWORD = "p@ss%w/o:r#d?x+y=z" + secrets.token_hex(4)  # every character issue 34 §3 names
CLIENT_NAME = "rawp-client.test"  # the master resolves it to this machine (override file)
BASES = ("postgres:16", "redis:7")
SERVICES = ("postgres", "redis", "master", "gateway")


class Deployment:
    def __init__(self, tool: list[str], directory: Path) -> None:
        self.directory = directory
        self.project = f"rawp-compose-up-{secrets.token_hex(3)}"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.cert = self.key = directory
        self.compose = [
            *tool, "-p", self.project, "-f", str(directory / "compose.yaml"),
            "-f", str(directory / "compose.test.yaml"),
        ]  # fmt: skip

    def run(self, *args: str, timeout: float = 180, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*self.compose, *args],
            cwd=self.directory,
            capture_output=True,
            text=True,
            timeout=timeout,
            **kw,
        )

    def ok(self, *args: str, **kw) -> str:
        done = self.run(*args, **kw)
        said = f"compose {' '.join(args)}:\n{done.stdout}{done.stderr}"
        assert done.returncode == 0, f"{said}\n--- logs\n{self.logs()}"
        return done.stdout

    def health(self) -> dict[str, str]:
        states = {}
        for service in SERVICES:
            ids = self.ok("ps", "-q", service).split()
            if not ids:
                states[service] = "missing"
                continue
            state = json.loads(docker("inspect", "--format", "{{json .State}}", ids[0]))
            states[service] = (state.get("Health") or {}).get("Status", state["Status"])
        return states

    def wait_healthy(self, timeout: float = 180) -> float:
        started = time.monotonic()
        while set((states := self.health()).values()) != {"healthy"}:
            assert time.monotonic() - started < timeout, f"not healthy: {states}\n{self.logs()}"
            time.sleep(1)
        return time.monotonic() - started

    def logs(self) -> str:
        return self.run("logs", "--tail", "30").stdout


def _files(directory: Path, port: int) -> tuple[Path, Path]:
    """The real compose.yaml (its build context made absolute), the .env an operator makes, and
    the test's override: the client's certificate as the master's trust store, its name."""
    text = (ROOT / "compose.yaml").read_text()
    assert "    build: .\n" in text
    (directory / "compose.yaml").write_text(text.replace("    build: .\n", f"    build: {ROOT}\n"))
    dotenv(
        directory / ".env",
        {
            "RAWP_EDGE_SECRET": EDGE_SECRET,
            "RAWP_PLATFORM": "web",  # the gateway service needs a platform; the web edge has none
            "RAWP_POSTGRES_PASSWORD": PASSWORD,
            "RAWP_PUBLISHED_PORT": str(port),
            "RAWP_IMAGE": IMAGE,
        },
    )
    cert, key = self_signed_certificate(directory, CLIENT_NAME)
    cert.chmod(0o644)  # read by the image's user
    (directory / "compose.test.yaml").write_text(
        "services:\n  master:\n"
        f"    environment:\n      SSL_CERT_FILE: /certs/client.pem\n"
        f"    volumes:\n      - {cert}:/certs/client.pem:ro\n"
        f'    extra_hosts:\n      - "{CLIENT_NAME}:host-gateway"\n'
    )
    return cert, key


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    engine, why = get_engine()
    if engine is None:
        print(f"\nskipping compose: {why}")
        pytest.skip(why)
    tool = compose_tool()
    if tool is None:
        engine.stop()
        why = "no compose tool here (apt-get install docker-compose)"
        print(f"\nskipping compose: {why}")
        pytest.skip(why)
    made = None
    try:
        ensure_base_image(engine)
        for base in BASES:
            ensure_base_image(engine, base)
        print(f"\ndocker build: {build_image(IMAGE):.1f} s")
        made = Deployment(tool, tmp_path_factory.mktemp("compose"))
        made.cert, made.key = _files(made.directory, made.port)
        made.ok("up", "-d")
        print(f"compose up: healthy in {made.wait_healthy():.1f} s")
        yield made
    finally:
        if made is not None:
            made.run("down", "-v")
        engine.stop()


def test_every_service_is_healthy_on_postgresql_and_redis(deployment):
    assert deployment.health() == dict.fromkeys(SERVICES, "healthy")
    logs = deployment.ok("logs", "master")
    assert "database: postgresql+asyncpg://rawp:***@postgres:5432/rawp" in logs, logs
    assert "relay: shared through Redis" in logs
    assert PASSWORD not in logs and "Traceback" not in logs
    assert deployment.ok("exec", "-T", "master", "id", "-u").strip() == "10001"
    status, health = http_json(deployment.base + "/v1/health")  # the port .env moved
    assert (status, health["status"]) == (200, "online")


def test_pair_with_the_printed_url_and_run_a_session_through_the_gateway(deployment, tmp_path):
    printed = deployment.ok(
        "exec", "-T", "master", "rawp", "master", "pairing-url", "--user", "console:local"
    )
    url = printed.strip().splitlines()[-1]
    assert url.startswith("https://rawp.example.com/v1/auth/pair?token="), printed
    # The URL's host is the TLS proxy's; the same call at the published port.
    url = url.replace("https://rawp.example.com", deployment.base)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    port = free_port()
    # host-gateway is the default bridge's address on this machine: the client listens there.
    ipam = "{{(index .IPAM.Config 0).Gateway}}"
    host = docker("network", "inspect", "--format", ipam, "bridge").strip()
    state = ["--dev", "--state-dir", str(tmp_path / "client")]
    processes = Processes()
    try:
        pair = processes.rawp(
            "client", "pair", url, "--name", "compose-box", *state,
            "--public-address", f"https://{CLIENT_NAME}:{port}",
        )  # fmt: skip
        out, _ = pair.communicate(timeout=60)
        assert pair.returncode == 0 and b"paired as 'compose-box'" in out, out.decode()
        client = processes.rawp(
            "client", *state, "--host", host, "--port", str(port), "--tls-cert",
            str(deployment.cert), "--tls-key", str(deployment.key), "--allow-root", str(workspace),
        )  # fmt: skip
        read_until(client, "config synced with the master")
        session = deployment.run(
            "run", "--rm", "-T", "-e", "RAWP_PLATFORM=console", "gateway", "gateway",
            input="hello\n", timeout=180,
        )  # fmt: skip
    finally:
        processes.close()
    said = session.stdout + session.stderr
    assert session.returncode == 0, said
    assert 'You said: "hello"' in said and "done" in said, said


def _persisted(deployment) -> tuple[str, str]:
    """A user token (the signing key, in the master's volume) and a node (in PostgreSQL)."""
    status, issued = http_json(
        deployment.base + "/v1/edge/auth/token", {"subject": "console:persist"}, EDGE_SECRET
    )
    assert status == 200, issued
    status, made = http_json(deployment.base + "/v1/edge/pairing-urls", {}, issued["access_token"])
    assert status == 201, made
    token = made["pairing_url"].split("token=", 1)[1]
    status, paired = http_json(
        deployment.base + "/v1/auth/pair",
        {
            "pairing_token": token,
            "client_address": "https://10.0.0.9:8701",
            "device_name": "persisted-box",
            "client_credentials": {"access_token": "a", "refresh_token": "r", "expires_in": 600},
        },
    )
    assert status == 200, paired
    return issued["access_token"], paired["node_id"]


def _still_there(deployment, token: str, node_id: str) -> None:
    status, nodes = http_json(deployment.base + "/v1/edge/nodes", None, token)
    assert status == 200, nodes
    assert node_id in {node["node_id"] for node in nodes["nodes"]}, nodes


def test_state_survives_restart_and_down_up(deployment):
    token, node_id = _persisted(deployment)
    deployment.ok("restart", "master")
    deployment.wait_healthy()
    _still_there(deployment, token, node_id)
    deployment.ok("down")  # no -v: the volumes stay
    deployment.ok("up", "-d")
    deployment.wait_healthy()
    _still_there(deployment, token, node_id)


ONE_LINE = re.compile(r"^rawp master: cannot use the database at postgres:5432/rawp: (.+)$", re.M)


def _master_alone(deployment, *env: str) -> str:
    """A one-off master container beside the running one: its output, having failed."""
    done = deployment.run(
        "run", "--rm", "-T", "--no-deps", "-e", "RAWP_DATABASE_WAIT=3", *env, "master",
        timeout=120,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "Traceback" not in said and "could not listen" not in said, said
    assert "listening on" not in said and PASSWORD not in said, said
    return said


def test_a_wrong_password_and_a_stopped_database_are_one_line(deployment):
    said = _master_alone(deployment, "-e", "RAWP_DATABASE_PASSWORD=not-the-password")
    assert ONE_LINE.search(said).group(1) == "authentication failed (user rawp)", said
    deployment.ok("stop", "postgres")
    try:
        said = _master_alone(deployment)
        cause = ONE_LINE.search(said).group(1)
        assert cause.startswith(("name not resolved", "unreachable")), said
        assert cause.endswith("(waited 3 s)"), said
    finally:
        deployment.ok("start", "postgres")
        deployment.wait_healthy()
