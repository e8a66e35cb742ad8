"""`rawp up`: master, client and gateway in one process on loopback.

This is the one wiring module allowed to import master, client and gateway together
(tests/test_layout.py names it). One asyncio loop runs:

1. the master's Quart app under uvicorn on a loopback port, as `rawp master` serves it, in
   development mode (`--dev`: http:// and loopback addresses allowed — said in the output),
   with a fresh edge secret for this run only and its SQLite database under
   `<state-dir>/master`;
2. the local client's app under hypercorn on another loopback port, as `rawp client` serves it
   (client/server.py: one server for the client wherever it runs, issue 18 §3), its workspace
   the chosen one and its agents the agents file (else the demo agent and the known agent CLIs
   on PATH, client.agents.discover; `--agent` is checked against them first), state under
   `<state-dir>/client`;
3. pairing through the real HTTP API when needed: a pairing URL from the Edge API for the
   owner, then the client's own pairing call (which syncs both config scopes). Ports are kept
   in `<state-dir>/up.json` and reused while free, so a second run needs no new pairing; when
   an address changed, the old node first leaves the master (§3.5) and the client pairs anew;
4. the gateway (rawp_app.launch): the console unless Discord/Slack tokens are configured, and
   beside it the web edge (issue 21, docs/web.md) unless `--no-web`: a one-time sign-in link
   for the owner is printed as `web: <url>/login?t=<token>` once it listens.

Then it shuts down in order — the session ended (its agent stops), the client (every agent it
started is ended), the master — and leaves no process behind. The two servers are tasks of
one `TaskOwner` (runtime.tasks) closed on the way out: a server that fails is logged there with
its traceback, and one that does not stop in time is cancelled, never left running.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.cli import CommandError
from runtime.settings import add_flags, load
from runtime.tasks import TaskOwner, exit_status

if TYPE_CHECKING:
    from rawp_app.up_settings import UpSettings


def configure(parser: argparse.ArgumentParser) -> None:
    from rawp_app.up_settings import UpSettings

    add_flags(parser, UpSettings)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rawp_app.launch import NO_CONSOLE_INPUT, LaunchError, choose_platforms, input_is_null
    from rawp_app.up_settings import UpSettings
    from runtime.cli import writable_directory

    settings = load(UpSettings, args)
    if not settings.workspace_dir.is_dir():
        raise CommandError(f"--workspace {settings.workspace}: no such directory")
    if settings.agents_path is not None and not settings.agents_path.is_file():
        raise CommandError(f"--agents-file {settings.agents_file}: no such file")
    agent = choose_agent(settings.agent, settings.agents_path)
    try:
        platforms = choose_platforms(settings.platform)
    except LaunchError as exc:
        raise CommandError(str(exc)) from None
    chat = tuple(p for p in platforms if p != "web")
    if chat and chat != ("console",) and not settings.owner:
        raise CommandError(
            "set RAWP_UP_OWNER (or --owner) to your chat identity, e.g. discord:<your user id> "
            "or slack:<team id>:<user id>, so this machine is yours in chat"
        )
    writable_directory(settings.state_path)
    platforms = with_web(platforms, not settings.no_web)
    if "console" in platforms and input_is_null(sys.stdin):
        raise CommandError(NO_CONSOLE_INPUT)  # docker run without -i: said before any server starts
    try:
        # Non-zero when a critical task died (runtime.tasks rule 4).
        return exit_status(asyncio.run(run_up(settings, agent, platforms)))
    except LaunchError as exc:
        raise CommandError(str(exc)) from None
    except KeyboardInterrupt:
        return 130


def choose_agent(wanted: str, agents_file: Path | None) -> str:
    """`--agent` as the name of an agent the client offers (`claude` → `claude-code`), checked
    before any server starts: an unknown one is said with what is available, never left for the
    node to refuse mid-chat (issue 28 §5)."""
    from client.agents import AgentsFileError, load_agents
    from client.agents.discover import resolve_name, unknown_agent

    try:
        agents = load_agents(agents_file)
    except AgentsFileError as exc:
        raise CommandError(str(exc)) from None
    name = resolve_name(wanted, agents)
    if name is None or not agents[name].is_active:
        raise CommandError(unknown_agent(wanted, agents, agents_file))
    others = [a.name for a in agents.values() if a.is_active and a.name != name]
    if others:
        say(f"agent {name!r}; also here: {', '.join(others)} (--agent NAME picks one)")
    return name


# --- the stack ------------------------------------------------------------------------------

LOOPBACK = "127.0.0.1"
# This module is imported while `rawp` builds its parser, right after the interpreter starts:
# "ready" is measured from here, imports of the three tiers included.
COMMAND_STARTED = time.monotonic()
PORTS_FILE = "up.json"
READY_TIMEOUT_S = 30.0
SERVER_STOP_S = 15.0  # how long each server gets to stop before it is cancelled


def with_web(platforms: tuple[str, ...], web: bool) -> tuple[str, ...]:
    """The chat platforms, and the web edge beside them unless turned off (rule 4)."""
    if web and "web" not in platforms:
        return (*platforms, "web")
    if not web:
        return tuple(p for p in platforms if p != "web") or ("console",)
    return platforms


def say(text: str) -> None:
    """Status lines go to stderr: stdout is the chat transcript (scripts read it)."""
    print(f"rawp up: {text}", file=sys.stderr, flush=True)


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As the servers bind: a port whose old connections linger in TIME_WAIT is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def choose_ports(settings: UpSettings) -> tuple[int, int, int]:
    """Configured ports, else last run's while they are free, else free ones (rule 3): the
    master's, the client's and the web edge's."""
    try:
        last = json.loads((settings.state_path / PORTS_FILE).read_text())
    except (OSError, ValueError):
        last = {}
    chosen = []
    for wanted, key in (
        (settings.master_port, "master_port"),
        (settings.client_port, "client_port"),
        (settings.web_port, "web_port"),
    ):
        previous = last.get(key) if isinstance(last, dict) else None
        if wanted:
            chosen.append(wanted)
        elif isinstance(previous, int) and previous not in chosen and port_is_free(previous):
            chosen.append(previous)
        else:
            port = free_port()
            while port in chosen:
                port = free_port()
            chosen.append(port)
    return chosen[0], chosen[1], chosen[2]


def quiet_logging() -> None:
    """The console is the chat: servers only speak up with warnings, on stderr."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "hypercorn.error"):
        logging.getLogger(name).setLevel(logging.WARNING)


def serve_master(servers: TaskOwner, app, port: int, stop: asyncio.Event) -> asyncio.Task:
    """Serve on loopback the way `rawp master` serves (uvicorn, no permessage-deflate)."""
    from master.server import serve_asgi

    return servers.spawn(serve_asgi(app, LOOPBACK, port, stop), name=f"master on port {port}")


def serve_client(servers: TaskOwner, app, port: int, stop: asyncio.Event) -> asyncio.Task:
    """Serve on loopback the way `rawp client` serves (hypercorn, client/server.py)."""
    from client.server import serve_client as serve

    return servers.spawn(serve(app, LOOPBACK, port, stop), name=f"client on port {port}")


async def wait_until_up(url: str, server: asyncio.Task) -> None:
    import aiohttp

    from rawp_app.launch import LaunchError

    deadline = asyncio.get_running_loop().time() + READY_TIMEOUT_S
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http:
        while True:
            if server.done():
                server.result()  # a cancellation; a failure was logged by the servers' owner
                raise LaunchError(f"the server for {url} stopped while starting")
            try:
                async with http.get(url):
                    return  # any answer: it is serving
            except (aiohttp.ClientError, OSError, TimeoutError):
                pass
            if asyncio.get_running_loop().time() > deadline:
                raise LaunchError(f"{url} did not answer within {READY_TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.01)


async def run_up(settings: UpSettings, agent: str, platforms: tuple[str, ...]) -> int:
    """The three tiers on loopback (module docstring), `agent` and `platforms` as `run` chose
    them from `settings`."""
    from client.agents import AgentsFileError
    from client.app import create_app as create_client_app
    from master.app import create_app as create_master_app
    from rawp.clock import new_secret
    from rawp_app.launch import LaunchError, run_gateway

    quiet_logging()
    prepare_state_dir(settings.state_path)
    master_port, client_port, web_port = choose_ports(settings)
    master_url = f"http://{LOOPBACK}:{master_port}"
    # This run's own; kept in up.json (mode 0600, in the 0700 state dir beside the master's
    # signing key, which is worth more) so that `rawp doctor --up` can check this master.
    edge_secret = new_secret()
    client_settings = client_settings_of(settings, client_port)
    stop_servers = asyncio.Event()
    servers = await TaskOwner("rawp up", logging.getLogger(__name__)).start()
    master_app = create_master_app(master_settings_of(settings, master_port, edge_secret))
    master = serve_master(servers, master_app, master_port, stop_servers)
    client: asyncio.Task | None = None
    try:
        await wait_until_up(f"{master_url}/v1/edge/nodes", master)
        # Before the client app exists: it would start syncing with a stale pairing.
        await leave_stale_pairing(client_settings, master_url)
        try:
            client_app = create_client_app(client_settings)
        except AgentsFileError as exc:  # one line, as `rawp client` says it; no traceback
            raise LaunchError(str(exc)) from None
        client = serve_client(servers, client_app, client_port, stop_servers)
        await wait_until_up(f"{client_settings.address}/v1/health", client)
        client_services = client_app.config["client_services"]
        owner = settings.owner_subject
        await pair_if_needed(client_services, master_url, edge_secret, owner)
        save_run(settings.state_path, master_port, client_port, edge_secret, web_port)
        say_ready(master_url, client_settings.address, agent, settings.workspace_dir)
        gateway = gateway_settings_of(
            settings,
            agent,
            platforms,
            master_url=master_url,
            edge_secret=edge_secret,
            node=client_services.state.credentials.node_id,
            web_port=web_port,
        )

        async def announce(web_edge) -> None:  # rule 4: the owner's sign-in link
            say(f"web: {await web_edge.link_for(owner)}")

        return await run_gateway(gateway, stop=signal_event(), on_web=announce)
    finally:
        stop_servers.set()
        for server in (client, master):  # the client first: it ends the agents it started
            if server is not None:
                await asyncio.wait({server}, timeout=SERVER_STOP_S)
        await servers.close()  # cancels a server that did not stop in time


def say_ready(master_url: str, client_address: str, agent: str, workspace: Path) -> None:
    say(
        f"development mode (--dev) on loopback: master {master_url}, client {client_address} "
        f"(http, no TLS); agent {agent!r} in {workspace}; "
        f"ready {time.monotonic() - COMMAND_STARTED:.2f} s after start"
    )


def prepare_state_dir(state_dir: Path) -> None:
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    # The default state dir sits in the workspace: keep its keys and databases out of git and
    # out of the agent's file search (which honours .gitignore files).
    ignore = state_dir / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# rawp up state: keys and databases\n*\n")


def master_settings_of(settings: UpSettings, port: int, edge_secret: str):
    """The master `rawp up` runs: development mode on loopback, this run's edge secret."""
    from master.settings import EdgeSettings, MasterSettings

    return MasterSettings(
        state_dir=settings.state_path / "master",
        host=LOOPBACK,
        port=port,
        dev=True,
        edge=EdgeSettings(secret=edge_secret),
    )


def client_settings_of(settings: UpSettings, port: int):
    """The client `rawp up` runs: the workspace its one root and default, on loopback."""
    from client.settings import ClientSettings

    return ClientSettings(
        state_dir=settings.state_path / "client",
        allowed_roots=[settings.workspace_dir],
        host=LOOPBACK,
        port=port,
        agents_file=settings.agents_path,
        default_workspace=settings.workspace_dir,
        dev=True,
        kill_grace=2.0,
    )


def gateway_settings_of(
    settings: UpSettings,
    agent: str,
    platforms: tuple[str, ...],
    *,
    master_url: str,
    edge_secret: str,
    node: str | None,
    web_port: int,
):
    """The gateway `rawp up` runs: its chosen platforms and agent, the owner's console, the web
    edge on its chosen port."""
    from gateway.settings import ConsoleSettings, GatewaySettings, WebSettings

    return GatewaySettings(
        master_url=master_url,
        edge_secret=edge_secret,
        platform=platforms,
        state_dir=settings.state_path / "gateway",
        agents=(agent,),
        workspace=str(settings.workspace_dir),
        show_thinking=settings.show_thinking,
        approval_timeout=settings.approval_timeout,
        console=ConsoleSettings(
            user=settings.owner_subject.partition(":")[2] or "local", node=node, agent=agent
        ),
        web=WebSettings(host=settings.web_host, port=web_port, public_url=settings.web_public_url),
        voice=settings.voice,
    )


def signal_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop


def save_run(
    state_dir: Path, master_port: int, client_port: int, edge_secret: str, web_port: int = 0
) -> None:
    """Ports for the next run (rule 3) and this run's edge secret for `rawp doctor --up`."""
    path = state_dir / PORTS_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # a file from an older run may have been made wider
    with os.fdopen(fd, "w") as out:
        json.dump(
            {
                "master_port": master_port,
                "client_port": client_port,
                "web_port": web_port,
                "edge_secret": edge_secret,
            },
            out,
        )


async def leave_stale_pairing(settings, master_url: str) -> None:
    """Rule 3: a pairing for another address is undone before the client starts.

    The master is the same one (same key and database under the state dir), only its port
    may have moved, so the old node's tokens still work against the new URL: the node leaves
    (§3.5) and the credentials are cleared. If the master does not know it any more, the
    credentials are cleared all the same.
    """
    from client.link.master import MasterLink, MasterLinkError
    from client.state import StateDir

    state = StateDir.open(settings.state_dir)
    creds = state.credentials
    if not creds.paired:
        return
    stored = state.path / "address"
    same_address = stored.is_file() and stored.read_text() == settings.address
    if creds.master_url == master_url and same_address:
        return
    creds.master_url = master_url
    state.save()
    link = MasterLink(state, settings)
    try:
        await asyncio.wait_for(link.unpair(), 10)
    except (MasterLinkError, TimeoutError, OSError):
        pass
    finally:
        await link.close()
    creds.master_url = creds.node_id = creds.access_token = creds.refresh_token = None
    creds.server_credentials = None
    state.save()


async def pair_if_needed(client_services, master_url: str, edge_secret: str, owner: str) -> None:
    """Pair through the real HTTP API: a pairing URL for the owner from the Edge API, then the
    client's own `POST /v1/auth/pair` (which syncs both config scopes)."""
    from gateway.edge_client import EdgeClient

    state = client_services.state
    if state.credentials.paired:
        return
    edge = EdgeClient(master_url, edge_secret)
    try:
        answer = await edge.pairing_url(owner)
    finally:
        await edge.close()
    # One word, so it can be typed in a chat command (`/rawp start <device> <agent>`).
    device = "-".join(socket.gethostname().split())[:100] or "this-machine"
    await client_services.link.pair(answer.pairing_url, device, client_services.auth.issue())
    (state.path / "address").write_text(client_services.settings.address)
