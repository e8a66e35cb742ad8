"""`FakeDiscord`: the fake REST API and gateway on one loopback port, as an async context manager.

    async with FakeDiscord() as discord_fake:
        with discord_endpoints(discord_fake):
            bot = commands.Bot(command_prefix="!", intents=..., guild_ready_timeout=0.05)
            task = asyncio.create_task(bot.start(discord_fake.world.bot_token))
            await discord_fake.wait_for_ready_client()
            sent = await discord_fake.inject_message("hello")
            path = f"/channels/{sent['channel_id']}/messages"
            reply = await discord_fake.wait_for_call("POST", path)

URLs: `api_base_url` (http://127.0.0.1:PORT/api/v10, what DISCORD_API_BASE_URL holds) and
`gateway_url` (ws://127.0.0.1:PORT/gateway, what DISCORD_GATEWAY_URL holds). Several clients
(gateway replicas) may each connect to `gateway_url + "/<tag>"`: the tag names the connection
(`GatewaySession.tag`), and `gateway.only` sends injected events through one of them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from typing import Any

from aiohttp import web

from .calls import Call, CallLog, RateLimitPlan
from .discord_gateway import DiscordGateway
from .discord_payloads import (
    COMPONENT_BUTTON,
    COMPONENT_STRING_SELECT,
    INTERACTION_APPLICATION_COMMAND,
    INTERACTION_AUTOCOMPLETE,
    INTERACTION_COMPONENT,
    INTERACTION_MODAL_SUBMIT,
    DiscordWorld,
    modal_text_row,
)
from .discord_rest import API_PREFIX, DiscordRest

VOICE_MESSAGE_FLAG = 1 << 13  # Discord's message flag IS_VOICE_MESSAGE


class FakeDiscord:
    """A fake Discord on 127.0.0.1: REST under /api/v10, gateway websocket at /gateway."""

    def __init__(
        self, world: DiscordWorld | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.world = world or DiscordWorld()
        self.host = host
        self.port = port  # 0: a free port, read back after start
        self.log = CallLog()
        self.rate_limits = RateLimitPlan()
        self.gateway = DiscordGateway(self.world, self.log, lambda: self.gateway_url)
        self.rest = DiscordRest(
            self.world, self.log, self.rate_limits, self.gateway.dispatch, lambda: self.gateway_url
        )
        self.attachments: dict[str, bytes] = {}  # attachment id → bytes served by the CDN route
        self._runner: web.AppRunner | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> FakeDiscord:
        root = web.Application()
        root.router.add_get("/gateway", self.gateway.handle)
        root.router.add_get("/gateway/", self.gateway.handle)
        root.router.add_get("/gateway/{tag}", self.gateway.handle)  # one URL per client
        root.router.add_get("/attachments/{channel}/{attachment}/{filename}", self._attachment)
        root.add_subapp(API_PREFIX, self.rest.application())
        self._runner = web.AppRunner(root, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.gateway.close_all()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _attachment(self, request: web.Request) -> web.Response:
        """The CDN: attachment bytes for Attachment.read() (no auth, like Discord's CDN)."""
        data = self.attachments.get(request.match_info["attachment"])
        self.log.record(Call("GET", request.path, None, status=200 if data is not None else 404))
        if data is None:
            return web.Response(status=404, text="not found")
        return web.Response(body=data, content_type="application/octet-stream")

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def api_base_url(self) -> str:
        """The REST base (DISCORD_API_BASE_URL); discord.py appends route paths to it."""
        return self.base_url + API_PREFIX

    @property
    def gateway_url(self) -> str:
        """The gateway websocket URL (DISCORD_GATEWAY_URL); discord.py adds ?v=&encoding=."""
        return f"ws://{self.host}:{self.port}/gateway"

    # --- assertions --------------------------------------------------------------------------

    async def wait_for_call(self, method: str, path: str, timeout: float = 5.0, **kw) -> Call:  # noqa: ASYNC109
        return await self.log.wait_for_call(method, path, timeout, **kw)

    def calls(self, method: str, path: str) -> list[Call]:
        return self.log.find(method, path)

    def rate_limit(
        self,
        method: str,
        path: str,
        *,
        times: int = 1,
        retry_after: float = 0.3,
        is_global: bool = False,
    ) -> None:
        """Answer the next `times` calls to method+path (glob) with 429 + retry_after seconds."""
        self.rate_limits.add(
            method, path, times=times, retry_after=retry_after, is_global=is_global
        )

    async def wait_for_ready_client(
        self,
        timeout: float = 10.0,  # noqa: ASYNC109
        shard: int | None = None,
    ) -> None:
        """Wait until a client (with `shard`: one holding that shard) identified and got READY
        and GUILD_CREATE; injected events arrive after those. (discord.py fires on_ready
        `guild_ready_timeout` seconds later.)"""
        await self.gateway.wait_for_session(timeout, shard)

    async def wait_for_interaction_answer(
        self,
        interaction: dict[str, Any],
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> Call:
        """The callback call (POST /interactions/{id}/{token}/callback) answering `interaction`."""
        path = f"/interactions/{interaction['id']}/{interaction['token']}/callback"
        return await self.wait_for_call("POST", path, timeout, where=lambda c: c.status < 300)

    # --- injected events ---------------------------------------------------------------------

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send a raw gateway DISPATCH to the connected client(s)."""
        await self.gateway.dispatch(event, data)

    async def _inject(self, event: str, data: dict[str, Any]) -> None:
        # An injected event nobody receives would only show up as a puzzling timeout later.
        if not self.gateway.receivers(data):
            raise RuntimeError(f"cannot inject {event}: no client is connected to the fake gateway")
        await self.gateway.dispatch(event, data)

    async def add_thread(self, name: str, parent_id: str | None = None) -> dict[str, Any]:
        """A thread in the guild (as after an earlier run): in every later GUILD_CREATE, and
        announced with THREAD_CREATE to clients connected now."""
        thread = self.world.new_thread(
            parent_id or self.world.channel_id,
            self.world.application_id,
            name,
            self.world.ids.next(),
        )
        await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
        return thread

    async def inject_message(
        self,
        content: str,
        *,
        author: dict[str, Any] | None = None,
        channel_id: str | None = None,
        attachments: dict[str, bytes] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A human's MESSAGE_CREATE (default: alice in the test channel); returns the payload.

        `attachments` (file name → bytes) are served by the fake CDN at their `url`.
        """
        channel_id = channel_id or self.world.channel_id
        extra = dict(extra or {})
        if attachments:
            extra["attachments"] = [
                self._attachment_payload(channel_id, name, data)
                for name, data in attachments.items()
            ]
        message = self.world.message(
            channel_id, content, author=author or self.world.alice, extra=extra
        )
        self.rest.messages[message["id"]] = message
        await self._inject("MESSAGE_CREATE", message)
        return message

    async def inject_mention(
        self, content: str, *, author: dict[str, Any] | None = None, **kw: Any
    ) -> dict[str, Any]:
        """A message that mentions the bot first (`<@bot> content`), as a client writes it."""
        extra = {"mentions": [self.world.bot_user], **(kw.pop("extra", None) or {})}
        text = f"<@{self.world.application_id}> {content}"
        return await self.inject_message(text, author=author, extra=extra, **kw)

    async def inject_dm(
        self, content: str, *, author: dict[str, Any] | None = None, **kw: Any
    ) -> dict[str, Any]:
        """A direct message to the bot (no guild) from `author` (default alice)."""
        author = author or self.world.alice
        channel = self.world.dm_channel(author)
        return await self.inject_message(content, author=author, channel_id=channel["id"], **kw)

    async def inject_voice_message(
        self, audio: bytes, *, channel_id: str | None = None, content: str = "", **kw: Any
    ) -> dict[str, Any]:
        """A voice message as Discord sends one: flag IS_VOICE_MESSAGE (1 << 13) and one
        `voice-message.ogg` attachment of type audio/ogg with its duration and waveform."""
        channel_id = channel_id or self.world.channel_id
        voice = self._attachment_payload(
            channel_id, "voice-message.ogg", audio, content_type="audio/ogg"
        )
        voice |= {"duration_secs": 2.5, "waveform": "AAAA", "flags": 0}
        extra = {"attachments": [voice], "flags": VOICE_MESSAGE_FLAG}
        extra |= kw.pop("extra", None) or {}
        return await self.inject_message(content, channel_id=channel_id, extra=extra, **kw)

    def _attachment_payload(
        self,
        channel_id: str,
        name: str,
        data: bytes,
        content_type: str = "application/octet-stream",
    ) -> dict[str, Any]:
        attachment_id = self.world.ids.next()
        self.attachments[attachment_id] = data
        url = f"{self.base_url}/attachments/{channel_id}/{attachment_id}/{name}"
        return {
            "id": attachment_id,
            "filename": name,
            "size": len(data),
            "url": url,
            "proxy_url": url,
            "content_type": content_type,
        }

    async def _inject_interaction(self, kind: int, data: dict[str, Any], **kw) -> dict[str, Any]:
        interaction = self.world.interaction(kind, data, **kw)
        self.rest.interactions[interaction["token"]] = interaction
        self.rest.interaction_created[interaction["token"]] = time.monotonic()
        await self._inject("INTERACTION_CREATE", interaction)
        return interaction

    def _command_data(self, name: str, options: Iterable[dict[str, Any]]) -> dict[str, Any]:
        synced = [c for cmds in self.rest.commands.values() for c in cmds if c["name"] == name]
        data: dict[str, Any] = {
            "id": synced[0]["id"] if synced else self.world.ids.next(),
            "name": name,
            "type": 1,
            "options": list(options),
        }
        if synced and "guild_id" in synced[0]:
            data["guild_id"] = synced[0]["guild_id"]
        return data

    async def inject_slash_command(
        self, name: str, options: Iterable[dict[str, Any]] = (), **kw
    ) -> dict[str, Any]:
        """An application-command invocation (type 2); options from `command_option()`."""
        data = self._command_data(name, options)
        return await self._inject_interaction(INTERACTION_APPLICATION_COMMAND, data, **kw)

    async def inject_autocomplete(
        self, name: str, options: Iterable[dict[str, Any]], **kw
    ) -> dict[str, Any]:
        """An autocomplete request (type 4); mark the typed option with `focused=True`."""
        data = self._command_data(name, options)
        return await self._inject_interaction(INTERACTION_AUTOCOMPLETE, data, **kw)

    async def inject_button(
        self, custom_id: str, *, message: dict[str, Any], **kw
    ) -> dict[str, Any]:
        """A button click (type 3, component type 2) on `message` (a message the bot sent)."""
        data = {"custom_id": custom_id, "component_type": COMPONENT_BUTTON}
        kw.setdefault("channel_id", message["channel_id"])
        return await self._inject_interaction(INTERACTION_COMPONENT, data, message=message, **kw)

    async def inject_select(
        self, custom_id: str, values: list[str], *, message: dict[str, Any], **kw
    ) -> dict[str, Any]:
        """A string-select choice (type 3, component type 3) on `message`."""
        data = {"custom_id": custom_id, "component_type": COMPONENT_STRING_SELECT, "values": values}
        kw.setdefault("channel_id", message["channel_id"])
        return await self._inject_interaction(INTERACTION_COMPONENT, data, message=message, **kw)

    async def inject_modal_submit(
        self, custom_id: str, fields: dict[str, str], **kw
    ) -> dict[str, Any]:
        """A modal submit (type 5) with one text input per `fields` item (custom_id → value)."""
        data = {
            "custom_id": custom_id,
            "components": [modal_text_row(field_id, value) for field_id, value in fields.items()],
        }
        return await self._inject_interaction(INTERACTION_MODAL_SUBMIT, data, **kw)


@contextlib.contextmanager
def discord_endpoints(fake_or_api_base: FakeDiscord | str, gateway_url: str = "") -> Iterator[None]:
    """Point discord.py (process-wide) at other endpoints; restore the public ones after.

    discord.py has no per-client setting: the REST base is the class attribute
    `discord.http.Route.BASE` and a non-sharded client connects to
    `DiscordWebSocket.DEFAULT_GATEWAY` (an AutoShardedClient asks GET /gateway/bot instead).
    This is what DISCORD_API_BASE_URL / DISCORD_GATEWAY_URL must set in the adapter.
    """
    import discord.gateway
    import discord.http
    import yarl

    if isinstance(fake_or_api_base, FakeDiscord):
        api_base, gateway_url = fake_or_api_base.api_base_url, fake_or_api_base.gateway_url
    else:
        api_base = fake_or_api_base
    old_base = discord.http.Route.BASE
    old_gateway = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    discord.http.Route.BASE = api_base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)
    try:
        yield
    finally:
        discord.http.Route.BASE = old_base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_gateway
