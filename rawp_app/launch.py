"""Running the gateway on its platforms: what `rawp gateway` and `rawp up` call.

The gateway core (gateway/) never imports a platform, so the wiring lives here: build the Edge
API client and the conversation store, one `ConversationService` per platform, the platform's
bot around it, then run until stopped.

- The master is waited for first (up to `MASTER_WAIT_S`): a gateway started with it (Docker,
  compose) may be up before the master listens; after that a clear error, and the restart
  policy starts it again.
- Platforms: named explicitly (one or several: `slack,web`), else every platform whose token
  is configured (`DISCORD_BOT_TOKEN`, `SLACK_BOT_TOKEN`), else the console. The console runs
  alone or with the web edge only.
- The web edge (adapters.web, issue 21) is no chat bot: its server starts first, beside
  whatever else runs, and every chat platform's `/rawp web` gets its sign-in links
  (`ConversationService.web_links`). With the web edge alone the gateway serves it until
  stopped.
- The console is a single conversation: the session is started on the configured node (else
  the user's first online node) with the configured agent, prompts are read one per line until
  the input ends, every turn is rendered before the next line is read, and the session is
  ended on the way out (its agent stops). Exit code 0 when the input simply ended.
- Discord and Slack run until SIGINT/SIGTERM; their sessions keep running on the master and
  are picked up again (`resume`) when the gateway restarts.
- Tasks: the bots, the resuming and the wait for a stop signal run as one `race`
  (runtime.tasks): whichever ends first ends the rest, a bot that fails (a refused login) is
  raised here once, with its traceback, and the bots are closed on the way out. The console's
  chat loop races the session's pump and the stop signal the same way.
- Replicas: with a Redis URL each platform's service joins the cluster
  (gateway.replicas.cluster_routing): the adapter calls the cluster's hooks, its takeover sweep runs
  in the same race, and the cluster leaves (its leases released) after the service closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_exponential_jitter

from adapters.web import WebConfig, WebEdge
from gateway.edge_client import EdgeApiError, EdgeClient
from gateway.metrics import GatewayMetrics, MetricsServer
from gateway.platform import Invocation
from gateway.redaction import redact
from gateway.rendering.render import RenderOptions
from gateway.replicas.budgeted_platform import PlatformBudget, block_on_429
from gateway.replicas.platform_budget import parse_limits
from gateway.sessions.conversations import ConversationService, ConversationSettings, StartRefused
from gateway.sessions.live import ConnectedSession
from gateway.sessions.voice import Transcriber, VoiceConfig
from gateway.settings import GatewayOptions
from gateway.storage.conversation_store import ConversationStore, StoreError
from gateway.storage.web_logins import WebLogins
from gateway.storage.web_prompts import WebPrompts
from runtime.tasks import TaskOwner, race

log = logging.getLogger(__name__)

PLATFORMS = ("discord", "slack", "console", "web")
CONSOLE_WAIT_FOR_NODE_S = 30.0
DEFAULTS = GatewayOptions()


class LaunchError(Exception):
    """A configuration the gateway cannot run with; the message says what to change."""


@dataclass(frozen=True)
class GatewayConfig:
    master_url: str
    edge_secret: str = field(repr=False)
    database: Path
    platforms: tuple[str, ...]
    # Defaults: `rawp gateway`'s own (gateway.settings.GatewayOptions).
    agents: tuple[str, ...] = DEFAULTS.agents
    workspace: str | None = DEFAULTS.workspace
    show_thinking: bool = DEFAULTS.show_thinking
    approval_timeout_s: float = DEFAULTS.approval_timeout  # issue 15 §4: then it is denied
    unredacted_nodes: tuple[str, ...] = DEFAULTS.unredacted_nodes  # shown unredacted (§3)
    # the console conversation
    console_user: str = DEFAULTS.console_user
    node: str | None = DEFAULTS.node
    agent: str = DEFAULTS.agent
    usage_footer: bool = DEFAULTS.usage_footer  # a usage line after every turn (issue 16 §4)
    # GET /metrics and /health on this host:port (gateway.metrics); None: not served.
    metrics_address: tuple[str, int] | None = None
    metrics_token: str | None = field(default=None, repr=False)
    # Several replicas (docs/scale-out.md): the shared store, and Redis for what they share.
    database_url: str | None = field(default=None, repr=False)  # None: `database` (SQLite)
    redis_url: str | None = field(default=None, repr=False)  # None: one process
    redis_prefix: str = DEFAULTS.redis_prefix
    platform_limits: str = DEFAULTS.platform_limits  # overrides of the budget's table
    web: WebConfig = field(default_factory=WebConfig)  # with "web" in `platforms`
    voice: VoiceConfig = field(default_factory=VoiceConfig)  # voice messages in (issue 30 §6)


def choose_platforms(
    requested: str | Sequence[str] | None, env: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The platforms asked for, else those with a token configured, else the console."""
    env = os.environ if env is None else env
    if isinstance(requested, str):
        requested = [p.strip() for p in requested.split(",") if p.strip()]
    if requested:
        for name in requested:
            if name not in PLATFORMS:
                raise LaunchError(f"unknown platform {name!r}; one of {', '.join(PLATFORMS)}")
        chosen = tuple(dict.fromkeys(requested))
        if "console" in chosen and set(chosen) - {"console", "web"}:
            raise LaunchError("the console runs on its own or with web only (--platform console)")
        return chosen
    found = tuple(
        name
        for name, variable in (("discord", "DISCORD_BOT_TOKEN"), ("slack", "SLACK_BOT_TOKEN"))
        if env.get(variable)
    )
    return found or ("console",)


MASTER_WAIT_S = 60.0  # a master's cold start in a container takes a few seconds


async def run_gateway(
    config: GatewayConfig,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stop: asyncio.Event | None = None,
    on_web: Callable[[WebEdge], Awaitable[None]] | None = None,
) -> int:
    """Serve `config.platforms` until stopped; `on_web` is called once the web edge listens."""
    chat = tuple(p for p in config.platforms if p != "web")
    if chat == ("console",) and input_is_null(stdin or sys.stdin):
        raise LaunchError(NO_CONSOLE_INPUT)  # docker run without -i: said at once
    await asyncio.to_thread(redact.prepare)  # issue 15 §3: its patterns, compiled once
    edge = EdgeClient(config.master_url, config.edge_secret)
    try:  # issue 19 §1: a shared database for replicas, else the SQLite file
        store = await ConversationStore.open(config.database_url or config.database)
    except StoreError as exc:  # one line, never the URL (it may hold a password)
        raise LaunchError(str(exc)) from None
    settings = ConversationSettings(
        agents=config.agents,
        workspace_path=config.workspace,
        render=RenderOptions(
            show_thinking=config.show_thinking,
            approval_timeout_s=config.approval_timeout_s,
            unredacted_nodes=frozenset(config.unredacted_nodes),
            usage_footer=config.usage_footer,
        ),
    )
    services: list[ConversationService] = []
    clustered: list = []  # gateway.replicas.cluster_routing.ClusterHooks, with a Redis URL
    cluster_tasks = TaskOwner("cluster", log)
    metrics = GatewayMetrics()
    server = MetricsServer(metrics, config.metrics_token)
    # One platform budget, shared through Redis by every replica (issue 19 §5).
    budget = await PlatformBudget.open(
        config.redis_url, config.redis_prefix, parse_limits(config.platform_limits)
    )
    metrics.rate_limit_listeners.append(block_on_429(budget))
    web_edge = None
    try:
        if config.metrics_address is not None:
            await server.start(*config.metrics_address)
        if "web" in config.platforms:
            web_edge = await _start_web(edge, store, config)
            if on_web is not None:
                await on_web(web_edge)
        if not chat:  # the web edge alone
            await _wait_for_master(edge)
            await (stop or _signal_event()).wait()
            return 0
        if chat == ("console",):
            await _wait_for_master(edge)
            service = ConversationService(edge, store, settings)
            service.web_links = web_edge.link_for if web_edge else None
            services.append(service)
            metrics.watch("console", lambda: list(service.live.values()))
            return await run_console(
                service, config, stdin or sys.stdin, stdout or sys.stdout, stop=stop
            )
        bots = []
        for name in chat:
            service = ConversationService(edge, store, settings)
            service.web_links = web_edge.link_for if web_edge else None  # `/rawp web`
            services.append(service)
            metrics.watch(name, lambda service=service: list(service.live.values()))
            hooks = service
            if config.redis_url:
                hooks = await _join_cluster(service, config, cluster_tasks)
                clustered.append(hooks)
            bots.append(_bot(name, service, metrics, budget, config, hooks))
        if unknown := budget.unknown_overrides():  # the routes are the platforms' own
            raise LaunchError(unknown_routes(unknown, budget))
        await _wait_for_master(edge)  # after the bots: a bad platform setting is said at once
        sweeps = [hooks.sweep() for hooks in clustered]
        return await _serve_bots(bots, services, stop or _signal_event(), *sweeps)
    finally:
        if web_edge is not None:
            await web_edge.close()
        await server.close()
        for service in services:
            await service.close()
        await cluster_tasks.close()  # renewals and the bus reader stop, then leases go
        for hooks in clustered:
            await hooks.cluster.close()
        await budget.close()
        await store.close()
        await edge.close()


async def _start_web(edge: EdgeClient, store: ConversationStore, config: GatewayConfig) -> WebEdge:
    web_edge = WebEdge(
        edge,
        WebLogins(store.database),
        config.web,
        edge_secret=config.edge_secret,
        prompts=WebPrompts(store.database),
        agents=config.agents,
    )
    try:
        await web_edge.start()
    except OSError as exc:  # the port is taken, the address is not this machine's
        await web_edge.close()
        where = f"{config.web.host}:{config.web.port}"
        raise LaunchError(f"the web edge cannot listen on {where}: {exc.strerror or exc}") from None
    return web_edge


async def _join_cluster(service: ConversationService, config: GatewayConfig, owner: TaskOwner):
    """The service as one gateway replica: its hooks for the bot.

    See gateway.replicas.cluster_routing."""
    from gateway.replicas.cluster_routing import join_cluster

    try:
        return await join_cluster(service, config.redis_url, config.redis_prefix, owner)
    except Exception as exc:  # Redis refused or is away: said in one line, no traceback
        raise LaunchError(f"could not join the gateway replicas in Redis: {exc}") from None


async def _wait_for_master(edge: EdgeClient) -> None:
    try:
        await edge.wait_until_reachable(MASTER_WAIT_S)
    except EdgeApiError as exc:
        raise LaunchError(exc.message) from None


def _bot(
    name: str,
    service: ConversationService,
    metrics: GatewayMetrics | None = None,
    budget: PlatformBudget | None = None,
    config: GatewayConfig | None = None,
    hooks=None,
):
    hooks = hooks or service  # a cluster's hooks route verbs to the session's renderer
    transcriber = Transcriber(config.voice if config else None)  # voice messages in
    if name == "discord":
        from adapters.discord import DiscordBot, DiscordSettings

        try:
            discord_settings = DiscordSettings.from_env()
            leases = None
            if discord_settings.shard_plan.auto:  # DISCORD_SHARD_IDS=auto: Redis leases
                from adapters.discord.shard_leases import ShardLeases

                redis_url, prefix = (
                    (config.redis_url, config.redis_prefix) if config else (None, "")
                )
                leases = ShardLeases.for_plan(discord_settings.shard_count, redis_url, prefix)
            bot = DiscordBot(
                discord_settings, hooks, metrics, shard_leases=leases, transcriber=transcriber
            )
        except ValueError as exc:
            raise LaunchError(str(exc)) from None
    elif name == "slack":
        from adapters.slack import SlackBot, SlackSettings

        try:
            bot = SlackBot(SlackSettings.from_env(), hooks, metrics, transcriber)
        except ValueError as exc:
            raise LaunchError(str(exc)) from None
    else:
        raise LaunchError(f"the {name} platform runs on its own (--platform {name})")
    platform = budget.wrap(bot.platform) if budget else bot.platform
    service.bind_platform(metrics.wrap(platform) if metrics else platform)
    return bot


def unknown_routes(unknown: list[str], budget: PlatformBudget) -> str:
    known = sorted({route for d in budget.declared.values() for route in d.limits} | {"*"})
    return (
        f"RAWP_GATEWAY_PLATFORM_LIMITS names {', '.join(unknown)}: not a route of the "
        f"platforms running here ({', '.join(known)})"
    )


async def _serve_bots(bots, services: list[ConversationService], stop: asyncio.Event, *also) -> int:
    try:
        await race(
            stop.wait(), _resume(bots, services, stop), *(bot.serve() for bot in bots), *also
        )
    finally:
        for bot in bots:
            try:
                await bot.close()
            except Exception:  # one bot failing to close must not keep the others open
                log.exception("closing the %s bot failed", bot.platform.name)
    return 0


async def _resume(bots, services: list[ConversationService], stop: asyncio.Event) -> None:
    """Resume conversations once each platform can post (Discord: logged in), so a turn that
    ran on while the gateway was away renders into its thread; then serve until stopped."""
    for bot, service in zip(bots, services, strict=True):
        await _until_ready(bot)
        resumed = await service.resume()
        if resumed:
            log.info("%s: %d conversations resumed", service.platform.name, resumed)
    await stop.wait()


async def _until_ready(bot, timeout_s: float = 60.0) -> None:
    # Discord: its REST session is up (`online`, set once logged in), not `on_ready`, which
    # discord.py holds back for `guild_ready_timeout`: a gateway restarted mid-turn goes on
    # rendering that much sooner. Slack can post at once.
    ready = getattr(bot.platform, "online", None)
    if ready is None:
        return
    try:
        async with asyncio.timeout(timeout_s):
            await ready.wait()
    except TimeoutError:  # a bot that could not log in ends the race with its own error
        log.warning("%s: not ready after %.0f s; resuming anyway", bot.platform.name, timeout_s)


def _signal_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop


# --- the console ----------------------------------------------------------------------------


async def run_console(
    service: ConversationService,
    config: GatewayConfig,
    stdin: TextIO,
    stdout: TextIO,
    *,
    stop: asyncio.Event | None = None,
) -> int:
    from adapters.console import ConsoleComposer, ConsolePlatform, LineReader, run_chat

    lines = LineReader(stdin)
    platform = ConsolePlatform(stdout, lines, user_id=config.console_user)
    service.bind_platform(platform)
    invocation = Invocation(platform.user_id, platform.conversation)
    node = config.node or await _first_node(service, invocation)
    live, greeting = await _open(service, invocation, node, config.agent)
    platform.note(greeting)
    if _is_terminal(stdin):
        platform.note(
            "Type a prompt and press Enter. `/` lists the agent's commands, `@name` picks a "
            "file, Ctrl-D quits."
        )
    composer = ConsoleComposer(
        platform,
        lines,
        commands=lambda: live.renderer.commands,
        file_search=live.search_files,
    )
    # The chat waits for input; a session that ends meanwhile (its pump stops) ends it too
    # (run_chat races the pump), and so does a stop signal.
    chatting = run_chat(platform, composer, live.chat, pump=live.pump)
    code = 0
    try:
        await race(chatting, *([stop.wait()] if stop is not None else []))
    except ConnectionError:  # the session's link ended for good while sending
        platform.note("⏹ The session has ended.")
        code = 1
    finally:
        await service.end(invocation)  # the agent is ended, not left running
    if live.link.ended and not live.link.closed_here:
        code = 1  # the session ended under us (terminated elsewhere, its node gone)
    return code


async def _open(
    service: ConversationService, invocation: Invocation, node: str, agent: str
) -> tuple[ConnectedSession, str]:
    """Start the console's session; a node that is still syncing its config (K-03) or a master
    still starting is waited for a little, anything else is a clear error."""
    try:
        async for attempt in _console_waits(
            lambda exc: isinstance(exc, StartRefused) and exc.code in STARTING
        ):
            with attempt:
                return await service.open_session(invocation, node, agent)
    except StartRefused as refused:
        raise LaunchError(f"could not start {agent!r} on {node}: {refused.text}") from None
    raise AssertionError("unreachable: the retries end in a return or a raise")


async def _first_node(service: ConversationService, invocation: Invocation) -> str:
    """The console user's first online node, waiting a little for one to come up."""
    subject = service.subject_of(invocation)

    async def online_node() -> str:
        try:
            nodes = await service.edge.list_nodes(subject)
        except EdgeApiError as exc:
            if exc.error_code != "MASTER_UNREACHABLE":  # a master restarting: wait
                raise LaunchError(f"the master refused to list nodes: {exc.message}") from None
            raise _NotYet(f"the master refused to list nodes: {exc.message}") from None
        online = [n for n in nodes if n.status != "offline"]
        if not online:
            raise _NotYet
        return online[0].node_id

    try:
        async for attempt in _console_waits(lambda exc: isinstance(exc, _NotYet)):
            with attempt:
                return await online_node()
    except _NotYet as still:
        raise LaunchError(
            str(still)
            or f"no machine is paired for {subject}, or none is online: pair one with "
            f"`rawp master pairing-url --user {subject}` and `rawp client pair <url>`"
        ) from None
    raise AssertionError("unreachable: the retries end in a return or a raise")


# A node still syncing its config (K-03) or a master still starting: the console waits.
STARTING = ("CONFIG_NOT_SYNCED", "MASTER_UNREACHABLE")


class _NotYet(Exception):
    """No node is online yet, or the master is not answering yet."""


def _console_waits(retryable: Callable[[BaseException], bool]) -> AsyncRetrying:
    """Tries for up to CONSOLE_WAIT_FOR_NODE_S, the waits growing to 0.5 s with jitter."""
    return AsyncRetrying(
        retry=retry_if_exception(retryable),
        stop=stop_after_delay(CONSOLE_WAIT_FOR_NODE_S),
        wait=wait_exponential_jitter(multiplier=0.1, max=0.5, jitter=0.1),
        reraise=True,
    )


NO_CONSOLE_INPUT = (
    "the console chat reads prompts from standard input, and here it is /dev/null (nothing "
    "to read): in Docker add `-i` (`docker run -i … rawp up`, `-it` for a terminal), or pipe "
    "prompts in; for Discord or Slack set DISCORD_BOT_TOKEN or SLACK_BOT_TOKEN"
)


def input_is_null(stream: TextIO) -> bool:
    """True when the console's input is /dev/null, as in `docker run` without `-i`: the chat
    would end before its first prompt, so it is refused with NO_CONSOLE_INPUT instead of a
    silent exit 0. An empty pipe or file stays a valid (empty) script."""
    try:
        return os.path.samestat(os.fstat(stream.fileno()), os.stat(os.devnull))
    except (AttributeError, ValueError, OSError):  # no file descriptor: a test's StringIO
        return False


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
