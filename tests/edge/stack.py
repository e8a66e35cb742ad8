"""A real master and a real client as separate processes on loopback (`--dev`), paired through
the Edge API, with an edge written here: aiohttp for REST, `websockets` for the socket."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from websockets.asyncio.client import ClientConnection, connect

from rawp.frames import dump_frame, make_frame
from tests.edge.proxy import CuttableProxy
from tests.support import Processes, free_port, wait_for_http

EDGE_SECRET = "edge-secret-for-tests-0123456789abcdef"
SUBPROTOCOLS = ["rawp-dps-1.0", "rawp-1.0"]


def read_until(proc, needle: str, limit: float = 60.0) -> str:
    """The lines `proc` printed on its stdout pipe up to the first holding `needle`. The pipe
    must be read on afterwards, or the process closed: a child whose pipe nobody drains blocks
    in its next write once the pipe's 64 KiB are full (a long-lived process logs to a file:
    `Stack.client_log`, `follow_until`)."""
    seen = []
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        line = proc.stdout.readline().decode()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if needle in line:
            return "".join(seen)
    raise AssertionError(f"{needle!r} never appeared in:\n{''.join(seen)}")


def read_from(log: Path, offset: int) -> str:
    """What was written to `log` from byte `offset` on."""
    with log.open("rb") as file:
        file.seek(offset)
        return file.read().decode(errors="replace")


def follow_until(log: Path, offset: int, proc, needle: str, limit: float = 60.0) -> str:
    """What `proc` wrote to `log` from byte `offset` up to the first line holding `needle`."""
    deadline = time.monotonic() + limit
    while True:
        said = read_from(log, offset)
        if needle in said:
            end = said.find("\n", said.index(needle))
            return said if end < 0 else said[:end]
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{needle!r} never appeared in:\n{said}")
        time.sleep(0.05)


@dataclass
class Stack:
    processes: Processes
    root: Path
    master_url: str
    master_args: list[str]
    client_args: list[str]
    client_port: int
    proxy: CuttableProxy
    client_state: Path
    master_log: Path
    client_log: Path  # every client run's output, one after the other
    client_proc: Any = None
    node_id: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # for the master and the client
    client_start_log: str = ""  # what the last client run printed up to its config sync
    client_log_start: int = 0  # where the last client run's output begins in client_log

    def start_client(self, *extra: str) -> None:
        # To a file, as the master's: a pipe read only up to the config sync filled up later
        # in a long module and held the client in a logging write (issue 32).
        self.client_log_start = self.client_log.stat().st_size if self.client_log.exists() else 0
        with self.client_log.open("ab") as output:  # the child has its own descriptor
            self.client_proc = self.processes.rawp(
                *self.client_args, *extra, env=self.env, stdout=output
            )
        synced = "config synced with the master"
        self.client_start_log = follow_until(
            self.client_log, self.client_log_start, self.client_proc, synced
        )

    def client_output(self) -> str:
        """Everything the last client run wrote so far."""
        return read_from(self.client_log, self.client_log_start)

    def stop_client(self) -> None:
        self.client_proc.terminate()
        self.client_proc.wait(timeout=30)


async def user_token(master_url: str, subject: str, secret: str = EDGE_SECRET) -> str:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{master_url}/v1/edge/auth/token",
            json={"subject": subject},
            headers={"Authorization": f"Bearer {secret}"},
        ) as response,
    ):
        assert response.status == 200, await response.text()
        return (await response.json())["access_token"]


@dataclass
class Edge:
    """One edge (a gateway, a browser) acting for one user."""

    master_url: str
    token: str
    http: aiohttp.ClientSession
    sockets: list[ClientConnection] = field(default_factory=list)

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {self.token}"}
        async with self.http.request(
            method, self.master_url + path, json=body, headers=headers
        ) as response:
            raw = await response.read()
            return response.status, (orjson.loads(raw) if raw else None)

    async def connect(
        self, session_id: str, ticket: str, last_message_id: str | None = None
    ) -> ClientConnection:
        url = self.master_url.replace("http://", "ws://") + (
            f"/v1/edge/ws/stream?ticket={ticket}&session_id={session_id}"
        )
        if last_message_id:
            url += f"&last_message_id={last_message_id}"
        ws = await connect(url, subprotocols=SUBPROTOCOLS, max_size=None)
        self.sockets.append(ws)
        return ws

    async def close(self) -> None:
        for ws in self.sockets:
            with contextlib.suppress(Exception):
                await ws.close()


@contextlib.asynccontextmanager
async def edge_for(master_url: str, subject: str):
    token = await user_token(master_url, subject)
    async with aiohttp.ClientSession() as http:
        edge = Edge(master_url, token, http)
        try:
            yield edge
        finally:
            await edge.close()


async def demo_session(edge: Edge, workspace: Path) -> tuple[str, str, ClientConnection]:
    """(node_id, session_id, socket) of a new `demo` session on the edge's only node."""
    status, nodes = await edge.call("GET", "/v1/edge/nodes")
    assert status == 200, nodes
    node_id = nodes["nodes"][0]["node_id"]
    body = {"agent_name": "demo", "workspace_path": str(workspace)}
    status, made = await edge.call("POST", f"/v1/edge/nodes/{node_id}/sessions", body)
    assert status == 201, made
    return (
        node_id,
        made["session_id"],
        await edge.connect(made["session_id"], made["edge_ws_ticket"]),
    )


def frame(type: str, payload: dict, session_id: str | None = None, **extra) -> str:
    return dump_frame(make_frame(type, payload, session_id=session_id, **extra))


async def recv(ws: ClientConnection, wait: float = 30) -> dict:
    return orjson.loads(await asyncio.wait_for(ws.recv(), wait))


async def recv_until(ws: ClientConnection, type: str, wait: float = 30) -> list[dict]:
    seen = []
    while True:
        try:
            seen.append(await recv(ws, wait))
        except TimeoutError:
            kinds = [f["type"] for f in seen]
            raise AssertionError(f"no {type} within {wait} s; before it came: {kinds}") from None
        if seen[-1]["type"] == type:
            return seen


def start_stack(
    processes: Processes,
    tmp: Path,
    subject: str,
    proxy_class: type = CuttableProxy,
    env: dict[str, str] | None = None,
    master_extra: tuple[str, ...] = (),
) -> Stack:
    """Master and client processes, the client paired through the Edge API for `subject`
    (through a `proxy_class` proxy: tests/faults uses one that cuts at a chosen byte);
    `master_extra` are more `rawp master` flags (a budgets file)."""
    master_port, client_port = free_port(), free_port()
    root = tmp / "root"
    workspace = root / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "auth.py").write_text("def verify(token):\n    return True\n")
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    (workspace / "README.md").write_text("# demo\n")
    master_args = ["master", "--dev", "--port", str(master_port), "--state-dir", str(tmp / "m")]
    master_args += master_extra
    # The master's output goes to a file: nothing drains a pipe, and tests read what it logged.
    master_log = tmp / "master.log"
    master = processes.rawp(
        *master_args,
        env={"RAWP_EDGE_SECRET": EDGE_SECRET, **(env or {})},
        stdout=master_log.open("ab"),
    )
    master_url = f"http://127.0.0.1:{master_port}"
    wait_for_http(f"{master_url}/v1/edge/nodes", proc=master, timeout=30)
    proxy = proxy_class(client_port)
    pairing_url = asyncio.run(_pairing_url(master_url, subject))
    client_state = tmp / "c"
    pair = processes.rawp(
        "client", "pair", pairing_url, "--name", "test-box", "--dev",
        "--state-dir", str(client_state),
        "--public-address", f"http://127.0.0.1:{proxy.port}",
    )  # fmt: skip
    out, _ = pair.communicate(timeout=60)
    assert pair.returncode == 0, out.decode()
    client_args = [
        "client", "--dev", "--port", str(client_port), "--state-dir", str(client_state),
        "--allow-root", str(root), "--kill-grace", "0.5",
    ]  # fmt: skip
    return Stack(
        processes=processes,
        root=workspace,
        master_url=master_url,
        master_args=master_args,
        client_args=client_args,
        client_port=client_port,
        proxy=proxy,
        client_state=client_state,
        master_log=master_log,
        client_log=tmp / "client.log",
        env=dict(env or {}),
    )


async def _pairing_url(master_url: str, subject: str) -> str:
    async with edge_for(master_url, subject) as edge:
        status, body = await edge.call("POST", "/v1/edge/pairing-urls")
        assert status == 201, body
        return body["pairing_url"]


@contextlib.contextmanager
def running_stack(
    tmp: Path,
    subject: str,
    env: dict[str, str] | None = None,
    master_extra: tuple[str, ...] = (),
):
    """A started stack with its client running, every process and the proxy ended afterwards."""
    processes = Processes()
    made = None
    try:
        made = start_stack(processes, tmp, subject, env=env, master_extra=master_extra)
        made.start_client()
        yield made
    finally:
        if made is not None:
            made.proxy.close()
        processes.close()


async def push_tighter_limits(client_state: Path, root: Path, versions: dict) -> tuple[str, int]:
    """The client changes its limits at run time (§4.1.5): the client's own code, with the
    running client's credentials, PUTs a snapshot with `rate_limit` 40 to the master it paired
    with. Returns that master's URL and the new limits version."""
    from client.link.master import MasterLink
    from client.settings import ClientSettings
    from client.state import StateDir
    from rawp.config import DEFAULT_LIMITS

    state = StateDir.open(client_state)
    link = MasterLink(state, ClientSettings(state_dir=client_state, allowed_roots=[root]))
    link.versions = {"limits": versions["limits"], "capabilities": versions["capabilities"]}
    try:
        await link.change_limits(
            DEFAULT_LIMITS.model_copy(update={"rate_limit": 40}), reason="test: tighter limits"
        )
    finally:
        await link.close()
    return state.credentials.master_url, link.versions["limits"]
