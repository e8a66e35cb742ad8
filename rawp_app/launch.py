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
import functools
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_exponential_jitter

from adapters.web import WebEdge
from gateway.edge_client import EdgeApiError, EdgeClient
from gateway.metrics import GatewayMetrics, MetricsServer
from gateway.platform import Invocation
from gateway.redaction import redact
from gateway.rendering.render import RenderOptions
from gateway.replicas.budgeted_platform import PlatformBudget, block_on_429
from gateway.replicas.platform_budget import parse_limits
from gateway.sessions.conversations import ConversationService, ConversationSettings, StartRefused
from gateway.sessions.live import ConnectedSession
from gateway.sessions.schedule_command import ScheduleThreads
from gateway.sessions.voice import Transcriber
from gateway.settings import GatewaySettings
from gateway.storage.conversation_store import ConversationStore, StoreError
from gateway.storage.web_logins import WebLogins
from gateway.storage.web_prompts import WebPrompts
from runtime.settings import plain
from runtime.tasks import TaskOwner, race

log = logging.getLogger(__name__)

PLATFORMS = ("discord", "slack", "console", "web")
CONSOLE_WAIT_FOR_NODE_S = 30.0
CONSOLE_SEARCH_TIMEOUT_S = 15.0  # `@name` at the console: how long the file list is waited for


class LaunchError(Exception):
    """A configuration the gateway cannot run with; the message says what to change."""


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
    settings: GatewaySettings,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stop: asyncio.Event | None = None,
    on_web: Callable[[WebEdge], Awaitable[None]] | None = None,
) -> int:
    """Serve the platforms `settings` name (else those configured, `choose_platforms`) until
    stopped; `on_web` is called once the web edge listens."""
    platforms = choose_platforms(settings.platform)
    chat = tuple(p for p in platforms if p != "web")
    if chat == ("console",) and input_is_null(stdin or sys.stdin):
        raise LaunchError(NO_CONSOLE_INPUT)  # docker run without -i: said at once
    await asyncio.to_thread(redact.prepare)  # issue 15 §3: its patterns, compiled once
    gateway = await _Gateway.open(settings)
    try:
        if settings.metrics_listen is not None:
            await gateway.server.start(*settings.metrics_listen)
        if "web" in platforms:
            gateway.web_edge = await _start_web(gateway.edge, gateway.store, settings)
            if on_web is not None:
                await on_web(gateway.web_edge)
        if not chat:  # the web edge alone
            await _wait_for_master(gateway.edge)
            await (stop or _signal_event()).wait()
            return 0
        if chat == ("console",):
            await _wait_for_master(gateway.edge)
            service = gateway.service("console")
            return await run_console(
                service, settings, stdin or sys.stdin, stdout or sys.stdout, stop=stop
            )
        bots = [await gateway.chat_bot(name) for name in chat]
        if unknown := gateway.budget.unknown_overrides():  # the routes are the platforms' own
            raise LaunchError(unknown_routes(unknown, gateway.budget))
        await _wait_for_master(gateway.edge)  # after the bots: a bad platform setting is said
        sweeps = [hooks.sweep() for hooks in gateway.clustered]
        return await _serve_bots(bots, gateway.services, stop or _signal_event(), *sweeps)
    finally:
        await gateway.close()


@dataclass
class _Gateway:
    """What one gateway process runs on: the Edge API client, the conversation store, the
    metrics and the platform budget, and the conversation services made on them."""

    settings: GatewaySettings
    edge: EdgeClient
    store: ConversationStore
    metrics: GatewayMetrics
    server: MetricsServer
    budget: PlatformBudget
    services: list[ConversationService] = field(default_factory=list)
    clustered: list = field(default_factory=list)  # cluster_routing.ClusterHooks, with Redis
    cluster_tasks: TaskOwner = field(default_factory=lambda: TaskOwner("cluster", log))
    web_edge: WebEdge | None = None

    @classmethod
    async def open(cls, settings: GatewaySettings) -> _Gateway:
        edge = EdgeClient(settings.master_url, plain(settings.edge_secret) or "")
        try:  # issue 19 §1: a shared database for replicas, else the SQLite file
            store = await ConversationStore.open(plain(settings.database_url) or settings.database)
        except StoreError as exc:  # one line, never the URL (it may hold a password)
            raise LaunchError(str(exc)) from None
        metrics = GatewayMetrics()
        server = MetricsServer(metrics, plain(settings.metrics_token))
        # One platform budget, shared through Redis by every replica (issue 19 §5).
        budget = await PlatformBudget.open(
            plain(settings.redis_url), settings.redis_prefix, parse_limits(settings.platform_limits)
        )
        metrics.rate_limit_listeners.append(block_on_429(budget))
        return cls(settings, edge, store, metrics, server, budget)

    def service(self, name: str) -> ConversationService:
        """A conversation service for platform `name`, watched by the metrics."""
        service = ConversationService(self.edge, self.store, conversation_settings(self.settings))
        service.web_links = self.web_edge.link_for if self.web_edge else None  # `/rawp web`
        self.services.append(service)
        self.metrics.watch(name, lambda: list(service.live.values()))
        return service

    async def chat_bot(self, name: str):
        """Discord's or Slack's bot around its own service (a replica's, with Redis)."""
        service = self.service(name)
        hooks = service
        if self.settings.redis_url:
            hooks = await _join_cluster(service, self.settings, self.cluster_tasks)
            self.clustered.append(hooks)
        return _bot(name, service, self.metrics, self.budget, self.settings, hooks)

    async def close(self) -> None:
        if self.web_edge is not None:
            await self.web_edge.close()
        await self.server.close()
        for service in self.services:
            await service.close()
        await self.cluster_tasks.close()  # renewals and the bus reader stop, then leases go
        for hooks in self.clustered:
            await hooks.cluster.close()
        await self.budget.close()
        await self.store.close()
        await self.edge.close()


def conversation_settings(settings: GatewaySettings) -> ConversationSettings:
    """What the conversation layer and its renderers take from the gateway's settings."""
    return ConversationSettings(
        agents=settings.agents,
        workspace_path=settings.workspace,
        schedule_poll_s=settings.schedule_poll,
        render=RenderOptions(
            show_thinking=settings.show_thinking,
            approval_timeout_s=settings.approval_timeout,
            unredacted_nodes=frozenset(settings.unredacted_nodes),
            usage_footer=settings.usage_footer,
        ),
    )


async def _start_web(
    edge: EdgeClient, store: ConversationStore, settings: GatewaySettings
) -> WebEdge:
    web_edge = WebEdge(
        edge,
        WebLogins(store.database),
        settings.web,
        edge_secret=plain(settings.edge_secret) or "",
        prompts=WebPrompts(store.database),
        agents=settings.agents,
        transcriber=Transcriber(settings.voice),  # voice input as in chat (issue 30 §6)
    )
    try:
        await web_edge.start()
    except OSError as exc:  # the port is taken, the address is not this machine's
        await web_edge.close()
        where = f"{settings.web.host}:{settings.web.port}"
        raise LaunchError(f"the web edge cannot listen on {where}: {exc.strerror or exc}") from None
    return web_edge


async def _join_cluster(service: ConversationService, settings: GatewaySettings, owner: TaskOwner):
    """The service as one gateway replica: its hooks for the bot.

    See gateway.replicas.cluster_routing."""
    from gateway.replicas.cluster_routing import join_cluster

    try:
        return await join_cluster(service, plain(settings.redis_url), settings.redis_prefix, owner)
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
    settings: GatewaySettings | None = None,
    hooks=None,
):
    hooks = hooks or service  # a cluster's hooks route verbs to the session's renderer
    transcriber = Transcriber(settings.voice if settings else None)  # voice messages in
    if name == "discord":
        from adapters.discord import DiscordBot, DiscordSettings

        try:
            discord_settings = DiscordSettings.from_env()
            leases = None
            if discord_settings.shard_plan.auto:  # DISCORD_SHARD_IDS=auto: Redis leases
                from adapters.discord.shard_leases import ShardLeases

                redis_url, prefix = (
                    (plain(settings.redis_url), settings.redis_prefix) if settings else (None, "")
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
    ran on while the gateway was away renders into its thread; then post scheduled runs
    (gateway.sessions.schedule_command) until stopped."""
    for bot, service in zip(bots, services, strict=True):
        await _until_ready(bot)
        resumed = await service.resume()
        if resumed:
            log.info("%s: %d conversations resumed", service.platform.name, resumed)
    # Issue 30 §5: each platform's scheduled runs are posted into new threads from now on.
    await race(stop.wait(), *(ScheduleThreads(service).run() for service in services))


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
    settings: GatewaySettings,
    stdin: TextIO,
    stdout: TextIO,
    *,
    stop: asyncio.Event | None = None,
) -> int:
    from adapters.console import ConsoleComposer, ConsolePlatform, LineReader, run_chat

    lines = LineReader(stdin)
    platform = ConsolePlatform(stdout, lines, user_id=settings.console.user)
    service.bind_platform(platform)
    invocation = Invocation(platform.user_id, platform.conversation)
    node = settings.console.node or await _first_node(service, invocation)
    live, greeting = await _open(service, invocation, node, settings.console.agent)
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
        # No platform deadline here (Discord's autocomplete has 3 s): the person at the console
        # waits for the list, and a workspace's first search also builds its index.
        file_search=functools.partial(live.search_files, timeout_s=CONSOLE_SEARCH_TIMEOUT_S),
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
