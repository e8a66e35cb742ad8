"""The fake Discord gateway: a websocket speaking enough of gateway v10 for discord.py.

Sequence, as on Discord: HELLO (op 10) → client IDENTIFY (op 2) → READY dispatch (guilds
unavailable) → GUILD_CREATE. Heartbeats (op 1) get HEARTBEAT_ACK (op 11); REQUEST_GUILD_MEMBERS
(op 8) gets a GUILD_MEMBERS_CHUNK; RESUME (op 6) gets RESUMED. Every frame the client sends is
recorded in the call log as method "WS" with the op name as path (e.g. `("WS", "IDENTIFY")`).

discord.py asks for `compress=zlib-stream` unless zstandard is installed: then every payload is
one zlib stream shared by the connection, each message ending in a Z_SYNC_FLUSH (00 00 ff ff),
sent as a binary frame. Any other (or no) compression request is answered with plain text frames,
which discord.py also accepts.

Shards: an IDENTIFY may carry `shard: [id, count]` (an unsharded client is shard 0 of 1). Its
READY and GUILD_CREATEs list only that shard's guilds (`(guild_id >> 22) % count`), and every
dispatch about a guild goes only to the connections holding the guild's shard; events without
a guild (direct messages) go to shard 0, as on Discord.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import zlib
from typing import Any

from aiohttp import WSMsgType, web

from .calls import Call, CallLog
from .discord_payloads import DiscordWorld, shard_of

OP_DISPATCH, OP_HEARTBEAT, OP_IDENTIFY, OP_RESUME = 0, 1, 2, 6
OP_REQUEST_MEMBERS, OP_HELLO, OP_HEARTBEAT_ACK = 8, 10, 11
OP_NAMES = {
    0: "DISPATCH",
    1: "HEARTBEAT",
    2: "IDENTIFY",
    3: "PRESENCE_UPDATE",
    4: "VOICE_STATE_UPDATE",
    6: "RESUME",
    8: "REQUEST_GUILD_MEMBERS",
}
INTENT_CONTENT = 1 << 15  # MESSAGE_CONTENT (privileged)
# Heartbeat interval announced in HELLO. Long, so heartbeats never race a short test.
HEARTBEAT_INTERVAL_MS = 41250


def _decode(message) -> dict[str, Any] | None:
    """A client frame as a JSON object, or None when it is not one."""
    if message.type != WSMsgType.TEXT:
        return None
    try:
        frame = json.loads(message.data)
    except ValueError:
        return None
    return frame if isinstance(frame, dict) else None


def _valid_shard(shard: Any) -> bool:
    """`[id, count]` with 0 <= id < count."""
    return (
        isinstance(shard, list)
        and len(shard) == 2
        and all(isinstance(n, int) for n in shard)
        and 0 <= shard[0] < shard[1]
    )


class GatewaySession:
    """One connected client: its websocket, its sequence number and its compressor."""

    def __init__(self, ws: web.WebSocketResponse, compress: bool, peer=None) -> None:
        self.ws = ws
        self.peer = peer  # the client's (host, port): which process holds this connection
        self.received: list[tuple[str, dict[str, Any]]] = []  # dispatches sent by dispatch()
        self.sequence = 0
        self.session_id = secrets.token_hex(16)
        self.intents = 0  # from IDENTIFY
        self.shard = (0, 1)  # (id, count) from IDENTIFY
        self.tag: str | None = None  # the last part of a `/gateway/<tag>` URL, if any
        self._compressor = zlib.compressobj() if compress else None
        self._send_lock = asyncio.Lock()

    async def send(self, op: int, data: Any, event: str | None = None) -> None:
        async with self._send_lock:  # sequence numbers must go out in order
            frame: dict[str, Any] = {"op": op, "d": data, "s": None, "t": None}
            if op == OP_DISPATCH:
                self.sequence += 1
                frame["s"], frame["t"] = self.sequence, event
            text = json.dumps(frame)
            if self._compressor is None:
                await self.ws.send_str(text)
            else:
                chunk = self._compressor.compress(text.encode())
                chunk += self._compressor.flush(zlib.Z_SYNC_FLUSH)
                await self.ws.send_bytes(chunk)


class DiscordGateway:
    """The websocket handler plus the list of live sessions events are injected into."""

    def __init__(self, world: DiscordWorld, log: CallLog, resume_url) -> None:
        self.world = world
        self.log = log
        self.resume_url = resume_url  # callable → the URL put in READY.resume_gateway_url
        self.sessions: list[GatewaySession] = []
        # Every open socket, identified or not: close_all must end them all. A client that had
        # reconnected but not yet identified kept its handler open, and aiohttp's cleanup then
        # waited its full shutdown timeout (60 s) for it: a minute per test under load.
        self.sockets: set[web.WebSocketResponse] = set()
        self.closing = False
        self.shard_of_session: dict[str, tuple[int, int]] = {}  # a RESUME keeps its shard
        # Set: injected events reach this session only (several gateway replicas, each with its
        # own connection, and a test that chooses which one an event arrives through).
        self.only: GatewaySession | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.closing:  # the fake is shutting down: a reconnecting client is turned away
            return web.Response(status=503, text="the fake Discord is closing")
        ws = web.WebSocketResponse(autoping=True, max_msg_size=0)
        await ws.prepare(request)
        self.sockets.add(ws)
        compress = request.query.get("compress") == "zlib-stream"
        peer = request.transport.get_extra_info("peername") if request.transport else None
        session = GatewaySession(ws, compress=compress, peer=peer)
        session.tag = request.match_info.get("tag")  # /gateway/<tag>: which client this is
        self.log.record(Call("WS", "CONNECT", {"zlib_stream": compress}, query=dict(request.query)))
        await session.send(OP_HELLO, {"heartbeat_interval": HEARTBEAT_INTERVAL_MS})
        try:
            async for message in ws:
                if message.type == WSMsgType.ERROR:
                    break
                frame = _decode(message)
                if frame is None:  # Discord closes with 4002 on a payload it cannot decode
                    self.log.record(Call("WS", "INVALID", str(message.data)[:200], status=4002))
                    await ws.close(code=4002, message=b"Error while decoding payload.")
                    break
                await self._receive(session, frame)
        finally:
            self.sockets.discard(ws)
            if session in self.sessions:
                self.sessions.remove(session)
        return ws

    async def _receive(self, session: GatewaySession, frame: dict[str, Any]) -> None:
        op, data = frame.get("op"), frame.get("d")
        known = op in OP_NAMES and op != OP_DISPATCH
        self.log.record(
            Call("WS", OP_NAMES.get(op, f"OP_{op}"), data, status=200 if known else 4001)
        )
        if not known:  # Discord closes with 4001 on an opcode it does not accept from clients
            await session.ws.close(code=4001, message=b"Unknown opcode.")
            return
        if op in (OP_IDENTIFY, OP_RESUME, OP_REQUEST_MEMBERS) and not isinstance(data, dict):
            await session.ws.close(code=4002, message=b"Error while decoding payload.")
            return
        if op == OP_HEARTBEAT:
            await session.send(OP_HEARTBEAT_ACK, None)
        elif op == OP_IDENTIFY:
            if data.get("token") != self.world.bot_token:
                await session.ws.close(code=4004, message=b"Authentication failed.")
                return
            session.intents = data.get("intents") or 0
            shard = data.get("shard") or [0, 1]
            if not _valid_shard(shard):  # Discord closes with 4010 on an invalid shard
                await session.ws.close(code=4010, message=b"Invalid shard.")
                return
            session.shard = (shard[0], shard[1])
            self.shard_of_session[session.session_id] = session.shard
            guilds = self.world.guilds_on(*session.shard)
            resume = self.resume_url()
            if session.tag:  # a resume comes back to the same tagged URL
                resume = f"{resume.rstrip('/')}/{session.tag}"
            ready = self.world.ready(session.session_id, resume, guilds)
            if "shard" in data:  # a sharded client's READY echoes [shard_id, num_shards]
                ready["shard"] = data["shard"]
            await session.send(OP_DISPATCH, ready, "READY")
            for guild_id in guilds:
                await session.send(OP_DISPATCH, self.world.guild_create(guild_id), "GUILD_CREATE")
            self.sessions.append(session)  # from now on, injected events reach this client
        elif op == OP_RESUME:
            session.session_id = data.get("session_id") or session.session_id
            session.shard = self.shard_of_session.get(session.session_id, session.shard)
            await session.send(OP_DISPATCH, {}, "RESUMED")
            self.sessions.append(session)
        elif op == OP_REQUEST_MEMBERS:
            chunk = self.world.members_chunk(data.get("nonce"), data.get("guild_id"))
            await session.send(OP_DISPATCH, chunk, "GUILD_MEMBERS_CHUNK")

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send one DISPATCH to every identified session holding the event's shard (no-op when
        none is connected)."""
        for session in self.receivers(data):
            session.received.append((event, data))
            await session.send(OP_DISPATCH, self._as_seen_by(session, event, data), event)

    def receivers(self, data: dict[str, Any]) -> list[GatewaySession]:
        """The open sessions an event about `data` reaches: those holding its guild's shard
        (shard 0 for an event without a guild, a DM), narrowed to `only` when that is set."""
        guild_id = data.get("guild_id") or self.world.guild_of(data.get("channel_id"))
        return [
            session
            for session in (list(self.sessions) if self.only is None else [self.only])
            if not session.ws.closed
            and session.shard[0] == (shard_of(guild_id, session.shard[1]) if guild_id else 0)
        ]

    def _as_seen_by(self, session: GatewaySession, event: str, data: dict[str, Any]) -> dict:
        """Without the MESSAGE_CONTENT intent Discord blanks a message's content, embeds,
        attachments and components, unless the message is the bot's own or mentions it."""
        if event not in ("MESSAGE_CREATE", "MESSAGE_UPDATE") or session.intents & INTENT_CONTENT:
            return data
        bot_id = self.world.application_id
        mentioned = any(user.get("id") == bot_id for user in data.get("mentions", []))
        if data.get("author", {}).get("id") == bot_id or mentioned:
            return data
        return {**data, "content": "", "embeds": [], "attachments": [], "components": []}

    async def wait_for_session(
        self,
        timeout: float = 10.0,  # noqa: ASYNC109
        shard: int | None = None,
    ) -> GatewaySession:
        """Wait until a client has identified (or resumed); with `shard`, one holding it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not (
            found := [s for s in self.sessions if shard in (None, s.shard[0]) and not s.ws.closed]
        ):
            if loop.time() >= deadline:
                which = "no client" if shard is None else f"no client for shard {shard}"
                raise TimeoutError(f"{which} identified on the fake gateway within {timeout}s")
            await asyncio.sleep(0.01)
        return found[-1]

    async def close_all(self) -> None:
        self.closing = True
        for ws in list(self.sockets):
            await ws.close()
        self.sessions.clear()
