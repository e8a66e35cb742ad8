"""The Slack app: Bolt's AsyncApp in Socket Mode (default) or HTTP mode, and its platform.

`SlackBot(settings, hooks)` builds the Web API client (SLACK_API_BASE_URL, 429s waited out),
the platform, the access policy and the Bolt app with every listener (adapters.slack.handlers).
`await bot.start()` connects Socket Mode, or serves Bolt's endpoint (`/slack/events`, every
request's signature checked with SLACK_SIGNING_SECRET) on SLACK_HTTP_HOST:SLACK_HTTP_PORT;
`await bot.close()` stops either.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any, TypeVar

import aiohttp
from aiohttp import web
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from adapters.call_labels import slack_label
from adapters.slack import handlers
from adapters.slack.access import SlackAccess, members_from
from adapters.slack.mrkdwn import from_slack_text
from adapters.slack.platform import SlackPlatform, web_client
from adapters.slack.settings import SlackSettings
from gateway.metrics import GatewayMetrics
from gateway.platform import ConversationHooks, ConversationRef
from gateway.sessions.prompt import PromptDraft, PromptError
from gateway.sessions.voice import Clip, Transcriber, add_transcript, is_audio, transcript_note
from rawp.events import PromptRequest

log = logging.getLogger(__name__)
EVENTS_PATH = "/slack/events"
SUGGESTION_BUDGET_S = 2.0  # Slack drops a block_suggestion answered after 3 s
T = TypeVar("T")


class SlackBot:
    def __init__(
        self,
        settings: SlackSettings,
        hooks: ConversationHooks | None = None,
        metrics: GatewayMetrics | None = None,
        transcriber: Transcriber | None = None,
    ) -> None:
        self.settings = settings
        self.transcriber = transcriber or Transcriber()  # audio clips in (issue 30 §6)
        # With metrics, the Web API calls share one session that counts them (gateway.metrics);
        # slack_sdk applies no timeout to a session it did not make, so it carries its own.
        self._session = (
            aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=30),
                trace_configs=[metrics.platform_trace("slack", slack_label)],
            )
            if metrics is not None
            else None
        )
        self.client = web_client(
            settings.bot_token.get_secret_value(),
            settings.api_base_url,
            settings.max_retries,
            self._session,
        )
        self.platform = SlackPlatform(self.client, hooks, approver_ids=self.approver_ids)
        self.access = SlackAccess(
            members_from(self.client),
            teams=settings.allowed_teams,
            channels=settings.allowed_channels,
            usergroups=settings.allowed_usergroups,
            dms=settings.allow_dms,
        )
        self.app = AsyncApp(
            client=self.client,
            signing_secret=settings.signing_secret.get_secret_value()
            or "socket-mode-has-no-signatures",
            request_verification_enabled=settings.mode == "http",
        )
        handlers.register(self.app, self)
        self._socket: AsyncSocketModeHandler | None = None
        self._runner: web.AppRunner | None = None
        self.http_url: str | None = None
        self._closed: asyncio.Event | None = None

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        if self.settings.mode == "socket":
            # apps.connections.open uses the app-level token, at the same API base.
            opener = AsyncWebClient(base_url=self.settings.api_base_url)
            self._socket = AsyncSocketModeHandler(
                self.app, self.settings.app_token.get_secret_value(), web_client=opener
            )
            await self._socket.connect_async()
            return
        self._runner = web.AppRunner(self.app.web_app(path=EVENTS_PATH), handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.settings.http_host, self.settings.http_port)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.http_url = f"http://{host}:{port}{EVENTS_PATH}"
        log.info("slack: serving Bolt at %s", self.http_url)

    async def serve(self) -> None:
        """Start, then run until `close()`: what `rawp gateway` awaits."""
        self._closed = asyncio.Event()
        await self.start()
        await self._closed.wait()

    async def close(self) -> None:
        if self._closed is not None:
            self._closed.set()
        if self._socket is not None:
            await self._socket.close_async()
            self._socket = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def approver_ids(self) -> frozenset[str]:
        """Members of SLACK_APPROVER_USERGROUPS, for `RenderOptions.approver_ids` (they may
        answer any approval); read with usergroups.users.list like the access groups."""
        found: set[str] = set()
        for group in sorted(self.settings.approver_usergroups):
            found |= await self.access.members(group)
        return frozenset(found)

    # --- helpers for the listeners --------------------------------------------------------

    @staticmethod
    async def within_budget(lookup: Awaitable[T]) -> T | None:
        try:
            return await asyncio.wait_for(lookup, SUGGESTION_BUDGET_S)
        except TimeoutError:
            log.info("suggestion lookup too slow; answered with no options")
            return None

    async def prompt_of(self, event: dict[str, Any]) -> tuple[PromptRequest, str | None]:
        """Typed text (escaped when built, §16.2.2), the transcript of any audio clip, and the
        other shared files within their limits; with the transcript, if any."""
        draft = PromptDraft()
        typed = from_slack_text(event.get("text") or "")
        draft.add_text(typed)
        shared_files = event.get("files") or []
        audio = [f for f in shared_files if is_audio(f.get("mimetype"), f.get("subtype"))]
        heard = None
        if audio:  # transcribed, not attached
            heard = await self.transcriber.transcribe_all([self._clip(f) for f in audio])
            add_transcript(draft, typed, heard)
        limits = draft.attachment_limits
        for shared in shared_files:
            if shared in audio:
                continue
            name, size = shared.get("name", "file"), int(shared.get("size") or 0)
            if size > limits.max_bytes_each:  # refuse before downloading it
                raise PromptError(
                    f"{name} is {size:,} bytes; an attachment may be at most "
                    f"{limits.max_bytes_each:,} bytes"
                )
            data = await self._download(shared["url_private_download"])
            draft.add_attachment(name, shared.get("mimetype") or "application/octet-stream", data)
        return draft.build(), heard

    def _clip(self, shared: dict[str, Any]) -> Clip:
        url = shared.get("url_private_download") or shared.get("url_private") or ""
        return Clip(
            shared.get("name") or "clip",
            shared.get("mimetype") or "",
            int(shared.get("size") or 0),
            lambda: self._download(url),
        )

    async def show_transcript(self, conversation: ConversationRef, heard: str | None) -> None:
        """Post what the agent got instead of the clip, in the conversation it went to."""
        if heard is not None:
            await self.platform.send_message(conversation, transcript_note(heard))

    async def _download(self, url: str) -> bytes:
        headers = {"Authorization": f"Bearer {self.settings.bot_token.get_secret_value()}"}
        timeout = aiohttp.ClientTimeout(total=30)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(url, headers=headers) as answer,
        ):
            if answer.status != 200:
                raise PromptError(f"could not fetch a shared file (HTTP {answer.status})")
            return await answer.read()
