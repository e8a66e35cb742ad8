"""The fake Slack Web API: `POST /api/<method>` as slack_sdk's AsyncWebClient calls it.

Arguments come as JSON (chat.postMessage, chat.update, views.*: slack_sdk sends those with
`json=`) or form fields; the token comes as `Authorization: Bearer xoxb-…` (slack_sdk moves a
`token` argument into that header; a `token` field is accepted too). Answers are HTTP 200 with
`{"ok": true, ...}` or `{"ok": false, "error": "..."}` exactly as Slack does, so slack_sdk raises
its own `SlackApiError`. A planned rate limit answers 429 with an integer `Retry-After`.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

from aiohttp import web

from .calls import Call, CallLog, RateLimitPlan
from .slack_payloads import SlackWorld

# Slack's Block Kit limits (api.slack.com/reference/block-kit): checked so an adapter that
# overflows them fails here as it would on Slack.
MAX_BLOCKS_PER_MESSAGE = 50
MAX_SECTION_TEXT = 3000
MAX_MESSAGE_TEXT = 40000
APP_TOKEN_METHODS = {"apps.connections.open"}


class SlackRefusal(Exception):
    """An `{"ok": false, "error": ...}` answer."""

    def __init__(self, error: str, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.extra = extra


async def read_arguments(request: web.Request) -> dict[str, Any]:
    """Query string, then JSON or form body, merged into one dict (form values as strings)."""
    args: dict[str, Any] = dict(request.query)
    if request.content_type == "application/json":
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError as exc:
            raise SlackRefusal("invalid_json") from exc
        if not isinstance(body, dict):
            raise SlackRefusal("invalid_json")
        args.update(body)
    elif request.can_read_body:
        args.update({k: v for k, v in (await request.post()).items() if isinstance(v, str)})
    # Form fields carry JSON as text (blocks, view): decode them as Slack does.
    for key in ("blocks", "view", "attachments"):
        if isinstance(args.get(key), str):
            try:
                args[key] = json.loads(args[key])
            except ValueError as exc:
                raise SlackRefusal(f"invalid_{key}") from exc
    return args


def _block_text(block: dict[str, Any]) -> str:
    """The text of a section-like block (`{"text": {"type": "mrkdwn", "text": ...}}`)."""
    text = block.get("text")
    if isinstance(text, dict):
        text = text.get("text")
    return text if isinstance(text, str) else ""


class SlackWebApi:
    """Handlers and the workspace state they keep (messages, reactions, views)."""

    def __init__(
        self,
        world: SlackWorld,
        log: CallLog,
        limits: RateLimitPlan,
        socket_mode_url: Callable[[], str],
    ) -> None:
        self.world = world
        self.log = log
        self.limits = limits
        self.socket_mode_url = socket_mode_url
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}  # (channel, ts) → message
        self.reactions: set[tuple[str, str, str]] = set()  # (channel, ts, name)
        self.views: dict[str, dict[str, Any]] = {}
        self.tickets: set[str] = set()  # Socket Mode tickets handed out by apps.connections.open
        self.methods: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "auth.test": self.auth_test,
            "chat.postMessage": self.post_message,
            "chat.update": self.update_message,
            "chat.delete": self.delete_message,
            "chat.postEphemeral": self.post_ephemeral,
            "reactions.add": self.add_reaction,
            "reactions.remove": self.remove_reaction,
            "conversations.info": self.conversation_info,
            "conversations.replies": self.replies,
            "views.open": self.open_view,
            "views.push": self.open_view,
            "views.update": self.update_view,
            "assistant.threads.setStatus": lambda args: {},
            "users.info": self.user_info,
            "apps.connections.open": self.open_connection,
        }

    def application(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{method}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        try:
            args = await read_arguments(request)
        except SlackRefusal as refusal:
            args, answer = {}, {"ok": False, "error": refusal.error}
        else:
            answer = None
        token = self._token(request, args)
        planned = self.limits.take(request.method, method)
        status, headers = 200, {}
        if planned is not None:
            status = 429
            headers["Retry-After"] = str(max(0, round(planned.retry_after)))
            answer = {"ok": False, "error": "ratelimited"}
        elif answer is None:
            answer = self._answer(method, token, args)
            if token == self.world.bot_token:
                headers["x-oauth-scopes"] = ",".join(self.world.bot_scopes)
        self.log.record(
            Call(
                method=request.method,  # slack_sdk uses GET for a few read methods
                path=method,
                body=args,
                query=dict(request.query),
                headers=dict(request.headers),
                status=status,
                response=answer,
            )
        )
        return web.json_response(answer, status=status, headers=headers)

    def _token(self, request: web.Request, args: dict[str, Any]) -> str | None:
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            return header.removeprefix("Bearer ")
        return args.pop("token", None)

    def _answer(self, method: str, token: str | None, args: dict[str, Any]) -> dict[str, Any]:
        handler = self.methods.get(method)
        if handler is None:
            return {"ok": False, "error": "unknown_method"}
        if token is None:
            return {"ok": False, "error": "not_authed"}
        wanted = self.world.app_token if method in APP_TOKEN_METHODS else self.world.bot_token
        if token != wanted:
            known = token in (self.world.app_token, self.world.bot_token)
            return {"ok": False, "error": "not_allowed_token_type" if known else "invalid_auth"}
        try:
            return {"ok": True, **handler(args)}
        except SlackRefusal as refusal:
            return {"ok": False, "error": refusal.error, **refusal.extra}

    # --- methods ------------------------------------------------------------------------------

    def auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": "https://rawp-test.slack.com/",
            "team": "rawp test",
            "user": "rawp-bot",
            "team_id": self.world.team_id,
            "user_id": self.world.bot_user_id,
            "bot_id": self.world.bot_id,
            "app_id": self.world.app_id,
            "is_enterprise_install": False,
        }

    def _channel(self, args: dict[str, Any], key: str = "channel") -> str:
        channel = args.get(key)
        if not channel or not isinstance(channel, str):
            raise SlackRefusal("channel_not_found")
        return channel

    def _check_content(self, args: dict[str, Any]) -> None:
        blocks = args.get("blocks")
        blocks = [] if blocks is None else blocks
        if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
            raise SlackRefusal("invalid_blocks_format")
        if not isinstance(args.get("text") or "", str):
            raise SlackRefusal("invalid_arguments")
        if not args.get("text") and not blocks and not args.get("attachments"):
            raise SlackRefusal("no_text")
        if len(args.get("text") or "") > MAX_MESSAGE_TEXT:
            raise SlackRefusal("msg_too_long")
        too_long = [i for i, b in enumerate(blocks) if len(_block_text(b)) > MAX_SECTION_TEXT]
        if len(blocks) > MAX_BLOCKS_PER_MESSAGE or too_long:
            detail = [f"[ERROR] block {i}: text longer than 3000" for i in too_long]
            raise SlackRefusal("invalid_blocks", response_metadata={"messages": detail})

    def store_message(self, channel: str, message: dict[str, Any]) -> dict[str, Any]:
        self.messages[(channel, message["ts"])] = message
        return message

    def post_message(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args)
        self._check_content(args)
        message = {
            "type": "message",
            "user": self.world.bot_user_id,
            "bot_id": self.world.bot_id,
            "app_id": self.world.app_id,
            "text": args.get("text") or "",
            "ts": self.world.next_ts(),
            "team": self.world.team_id,
        }
        for key in ("blocks", "thread_ts", "attachments", "metadata"):
            if args.get(key):
                message[key] = args[key]
        self.store_message(channel, message)
        return {"channel": channel, "ts": message["ts"], "message": message}

    def _stored(self, args: dict[str, Any], ts_key: str = "ts") -> dict[str, Any]:
        message = self.messages.get((self._channel(args), str(args.get(ts_key))))
        if message is None:
            raise SlackRefusal("message_not_found")
        return message

    def update_message(self, args: dict[str, Any]) -> dict[str, Any]:
        message = self._stored(args)
        self._check_content(args)
        for key in ("text", "blocks", "attachments"):
            if key in args:
                message[key] = args[key]
        message["edited"] = {"user": self.world.bot_user_id, "ts": self.world.next_ts()}
        return {"channel": args["channel"], "ts": message["ts"], "text": message["text"]}

    def delete_message(self, args: dict[str, Any]) -> dict[str, Any]:
        message = self._stored(args)
        del self.messages[(args["channel"], message["ts"])]
        return {"channel": args["channel"], "ts": message["ts"]}

    def post_ephemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        self._channel(args)
        self._check_content(args)
        if args.get("user") not in self.world.users:
            raise SlackRefusal("user_not_in_channel")
        return {"message_ts": self.world.next_ts()}

    def add_reaction(self, args: dict[str, Any]) -> dict[str, Any]:
        message = self._stored(args, "timestamp")
        key = (args["channel"], message["ts"], str(args.get("name")))
        if key in self.reactions:
            raise SlackRefusal("already_reacted")
        self.reactions.add(key)
        return {}

    def remove_reaction(self, args: dict[str, Any]) -> dict[str, Any]:
        message = self._stored(args, "timestamp")
        key = (args["channel"], message["ts"], str(args.get("name")))
        if key not in self.reactions:
            raise SlackRefusal("no_reaction")
        self.reactions.discard(key)
        return {}

    def conversation_info(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args)
        if channel != self.world.channel_id:
            raise SlackRefusal("channel_not_found")
        return {
            "channel": {
                "id": channel,
                "name": "rawp",
                "is_channel": True,
                "is_private": False,
                "is_member": True,
                "is_archived": False,
                "context_team_id": self.world.team_id,
            }
        }

    def replies(self, args: dict[str, Any]) -> dict[str, Any]:
        """A thread's messages, oldest first, in pages of `limit` (`cursor` → the next page);
        message metadata only with `include_all_metadata`, as Slack answers."""
        channel, ts = self._channel(args), str(args.get("ts"))
        if (channel, ts) not in self.messages:
            raise SlackRefusal("thread_not_found")
        thread = [
            m
            for (ch, m_ts), m in sorted(self.messages.items(), key=lambda kv: float(kv[0][1]))
            if ch == channel and (m_ts == ts or m.get("thread_ts") == ts)
        ]
        if str(args.get("include_all_metadata", "")).lower() not in ("1", "true"):
            thread = [{k: v for k, v in m.items() if k != "metadata"} for m in thread]
        start = int(args.get("cursor") or 0)
        limit = int(args.get("limit") or 1000)
        page, more = thread[start : start + limit], start + limit < len(thread)
        answer: dict[str, Any] = {"messages": page, "has_more": more}
        if more:
            answer["response_metadata"] = {"next_cursor": str(start + limit)}
        return answer

    def open_view(self, args: dict[str, Any]) -> dict[str, Any]:
        if not args.get("trigger_id"):
            raise SlackRefusal("invalid_trigger_id")
        view = args.get("view")
        if not isinstance(view, dict) or view.get("type") not in ("modal", "home"):
            raise SlackRefusal("invalid_arguments")
        stored = {**view, "id": "V" + secrets.token_hex(5).upper(), "state": {"values": {}}}
        stored.update(hash=secrets.token_hex(8), team_id=self.world.team_id)
        self.views[stored["id"]] = stored
        return {"view": stored}

    def update_view(self, args: dict[str, Any]) -> dict[str, Any]:
        view_id = args.get("view_id") or next(
            (
                v["id"]
                for v in self.views.values()
                if v.get("external_id") == args.get("external_id")
            ),
            None,
        )
        if view_id not in self.views:
            raise SlackRefusal("not_found")
        self.views[view_id].update(args.get("view") or {})
        self.views[view_id]["hash"] = secrets.token_hex(8)
        return {"view": self.views[view_id]}

    def user_info(self, args: dict[str, Any]) -> dict[str, Any]:
        user = self.world.users.get(str(args.get("user")))
        if user is None:
            raise SlackRefusal("user_not_found")
        return {"user": user}

    def open_connection(self, args: dict[str, Any]) -> dict[str, Any]:
        ticket = secrets.token_hex(12)
        self.tickets.add(ticket)
        return {"url": f"{self.socket_mode_url()}?ticket={ticket}"}
