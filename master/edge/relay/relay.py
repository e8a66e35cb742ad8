"""Where frames meet their sockets (RAWP §9.4.3, §9.4.4): the relay interface and its
in-process implementation.

`Relay` is the seam: the `InProcessRelay` here keeps every socket in this process's memory;
`master.edge.replicas.redis_relay.RedisRelay` implements the same methods across several master
replicas (issue 9, docs/scale-out.md), so the rest of the master does not know which it runs on.

Rules of the in-process relay:

1. `publish` offers one client frame's original text to every edge socket of the session
   (fan-out, E-WS-10) and keeps it for edges that reconnect with `last_message_id`, within
   the frames and bytes budgets of master.edge.relay.replay_ring (per session and for the
   whole master, issue 35). Offering never waits (edge_socket rule 1).
2. `publish_node` offers a master frame to every edge socket connected to any session of the
   node (E-NOT-01, E-NOT-04): one copy per socket, the same `message_id` on each (A-26).
3. `to_client` hands an edge frame to the session's client link; False when there is none.
4. `attach` sends a socket only what it cannot have seen, then live frames, with nothing
   falling between the two (issue 14 §1, §7):
   - without `last_message_id`: the greeting — the latest `session.capabilities`,
     `tool.catalog.publish` and `agent.commands.publish`;
   - with one this relay keeps: `session.history` and the kept frames after it, plus the
     node frames (`node.config.changed`) published since; no greeting (the edge has one,
     and a catalog or command list published later is among the kept frames);
   - with one it does not keep (this process restarted, or the ring moved past it): the
     client is asked for its buffered frames after the cursor (`frames_after`, client
     `GET /v1/session/{id}/frames`); live frames arriving meanwhile are held and, after the
     replay, delivered unless the replay had them (by `message_id`). The same frames can
     still come live after the replay — the client link reattaching later replays what it
     had not sent (issue 14 §1) — so the socket keeps skipping the replay's ids until the
     first frame the replay did not have. The greeting is sent first only when the client
     does not know the cursor either. `dropped` is the client's; when the client cannot
     be asked, it is the frames this relay let go of the session (never 0 when any went:
     the edge learns of the gap, replay_ring rule 4).
5. Control frames are claimed once per `message_id` within a session (E-WS-11, A-25).
6. Ownership: one process holds a session's client link; in a single process it always may.
"""

from __future__ import annotations

import abc
import itertools
import logging
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

import orjson

from master.edge.relay.edge_socket import GOING_AWAY, EdgeSocket
from master.edge.relay.replay_ring import SESSION_BYTES, TOTAL_BYTES, ReplayBudget, Ring
from rawp.frames import dump_frame, make_frame

log = logging.getLogger("rawp.master.edge.relay")

GREETING_TYPES = ("session.capabilities", "tool.catalog.publish", "agent.commands.publish")
# What a (re)attached client socket sends before its replay: not in the client's replay buffer,
# so never a cursor, and not a sign that a replay's repeats are over (rule 4).
NOT_A_CURSOR = (*GREETING_TYPES[:2], "session.history")
NODE_FRAMES_KEPT = 64  # node frames kept per node for edges that reconnect (rule 4)


@dataclass
class Resumed:
    """The client's answer for a cursor (client buffer rule 6)."""

    found: bool
    frames: list[str]
    dropped: int


class ClientSide(Protocol):
    """The master's link to the client for one session (master.edge.links.client_link)."""

    async def send(self, text: str) -> bool: ...


class OwnerHooks(Protocol):
    """What a shared relay tells the session layer (master.edge.sessions) about the others."""

    async def session_ended(self, session_id: str) -> None:
        """Another replica ended the session: close this process's link to it, if any."""

    async def ownership_lost(self, session_id: str) -> None:
        """Another replica holds the session's client link now: close ours, end nothing."""

    async def take_over(self, session_id: str) -> bool:
        """No replica holds the session's link: hold it here if possible; True if held."""

    async def node_closed(self, node_id: str) -> None:
        """Another replica unregistered the node (§3.5): close its sockets held here."""

    async def frames_after(self, node_id: str, session_id: str, after: str) -> Resumed | None:
        """The client's buffered frames after `after` (rule 4); None when it cannot say."""


class Relay(abc.ABC):
    shared = False  # True when several replicas share sessions (ownership must be claimed)
    hooks: OwnerHooks | None = None

    async def start(self, hooks: OwnerHooks) -> None:
        """Begin serving; `hooks` tell the session layer what other replicas did."""
        self.hooks = hooks

    async def close(self) -> None:
        """Stop serving (the process is shutting down)."""
        return None  # nothing to do in one process

    @abc.abstractmethod
    async def attach(self, edge: EdgeSocket, last_message_id: str | None = None) -> None:
        """Greet `edge`, replay what it missed after `last_message_id`, then go live (rule 4)."""

    @abc.abstractmethod
    def detach(self, edge: EdgeSocket) -> None: ...

    @abc.abstractmethod
    def publish(self, session_id: str, message_id: str, text: str, kind: str = "") -> None:
        """A client frame, forwarded unchanged to every edge socket of the session."""

    async def room(self) -> None:
        """Wait until `publish` may be called (a shared relay's bounded write queue)."""
        return None  # one process: publishing only offers to sockets, which never waits

    def has_room(self) -> bool:
        """Whether `room()` would return at once."""
        return True

    @abc.abstractmethod
    async def publish_node(self, node_id: str, text: str) -> int:
        """A master frame for every edge socket of the node; returns how many sockets got it
        here (a shared relay: how many replicas it was sent to)."""

    @abc.abstractmethod
    async def to_client(self, session_id: str, text: str) -> bool:
        """An edge frame for the session's client; False when no client link takes it."""

    @abc.abstractmethod
    def bind_client(self, session_id: str, link: ClientSide) -> None: ...

    @abc.abstractmethod
    def unbind_client(self, session_id: str) -> None: ...

    @abc.abstractmethod
    def remember_greeting(self, session_id: str, type: str, text: str) -> None: ...

    @abc.abstractmethod
    async def claim_control(self, session_id: str, message_id: str) -> bool:
        """Rule 5: True the first time a control `message_id` is seen in the session."""

    @abc.abstractmethod
    async def release_control(self, session_id: str, message_id: str) -> None:
        """A control frame that could not be delivered may be sent again with the same id."""

    @abc.abstractmethod
    def edges(self, session_id: str) -> list[EdgeSocket]:
        """The session's edge sockets held by this process."""

    @abc.abstractmethod
    def forget_session(self, session_id: str, code: int, reason: str) -> None:
        """The session ended: kick its edge sockets with `code`/`reason` and drop its state."""

    def drop_local(self, session_id: str, code: int, reason: str) -> None:
        """This process stops serving the session (shutdown): its sockets here are kicked. In a
        shared relay the session lives on through the other replicas."""
        self.forget_session(session_id, code, reason)

    # --- ownership (rule 6) --------------------------------------------------------------------

    async def claim(self, session_id: str) -> bool:
        """May this process hold the session's client link? Always, in one process."""
        return True

    async def release(self, session_id: str) -> None:
        """This process no longer holds the session's client link."""
        return None  # nothing to do in one process

    async def unowned(self, session_ids: list[str]) -> list[str]:
        """Those of `session_ids` that no process holds now."""
        return list(session_ids)

    async def cursor(self, session_id: str) -> str | None:
        """The last relayed frame a new holder reattaches after (None: nothing is known)."""
        return None

    async def node_closed(self, node_id: str) -> None:
        """The node was unregistered here (§3.5): tell the other replicas. None in one process."""
        return None


def history_frame(session_id: str, last_message_id: str, replayed: int, dropped: int = 0) -> str:
    """The frame that opens a reconnecting edge's replay (docs/edge-api.md)."""
    payload = {"since_message_id": last_message_id, "replayed": replayed, "dropped": dropped}
    return dump_frame(make_frame("session.history", payload, session_id=session_id))


def message_id_of(text: str) -> str | None:
    return kind_and_id(text)[1]


def kind_and_id(text: str) -> tuple[str, str | None]:
    """A frame text's `type` ("" if none) and `message_id` (None if none)."""
    try:
        envelope = orjson.loads(text)
        kind, message_id = envelope.get("type"), envelope.get("message_id")
    except (orjson.JSONDecodeError, AttributeError):
        return "", None
    return (kind if isinstance(kind, str) else ""), (
        message_id if isinstance(message_id, str) else None
    )


async def resume_from_client(
    relay: Relay, edge: EdgeSocket, last_message_id: str, kept: list[str], evicted: int = 0
) -> list[str]:
    """Rule 4's third case, up to the live frames: ask the client, offer what it owes the
    edge, and return the ids offered (held live frames with these ids are repeats). Falls
    back to the `kept` frames, greeting first, when the client cannot be asked; then
    `dropped` is the `evicted` frames the relay let go (replay_ring rule 4)."""
    session_id = edge.session_id
    resumed = None
    if relay.hooks is not None:
        try:
            resumed = await relay.hooks.frames_after(edge.node_id, session_id, last_message_id)
        except Exception:  # the client is away: the edge gets what this relay kept
            log.warning("session %s: could not ask the client for a replay", session_id)
    if resumed is None:
        log.info("session %s: an edge's cursor is not kept here; replaying what is", session_id)
        resumed = Resumed(found=False, frames=kept, dropped=evicted)
    replayed = [m for m in map(message_id_of, resumed.frames) if m]
    if not resumed.found:  # the edge may have no greeting; one among the kept frames is enough
        for text in await relay.greeting_texts(session_id):
            if message_id_of(text) not in replayed:
                edge.offer(text)
    edge.replayed = len(resumed.frames)
    edge.offer(history_frame(session_id, last_message_id, len(resumed.frames), resumed.dropped))
    for text in resumed.frames:
        edge.offer(text)
    return replayed


def replay_after(recent: list[tuple[str, str]], last_message_id: str) -> tuple[list[str], bool]:
    """The kept (message_id, text) pairs' texts after `last_message_id`, and whether it was
    found; when it was not, every kept frame (the edge drops those it has by `message_id`)."""
    ids = [message_id for message_id, _ in recent]
    found = last_message_id in ids
    start = ids.index(last_message_id) + 1 if found else 0
    return [text for _, text in recent[start:]], found


@dataclass
class _Hub:
    edges: set[EdgeSocket] = field(default_factory=set)
    client: ClientSide | None = None
    greeting: dict[str, str] = field(default_factory=dict)
    recent: Ring = field(default_factory=Ring)  # (message_id, text, order), bytes bounded
    controls: OrderedDict = field(default_factory=OrderedDict)  # claimed control message_ids
    holding: dict[EdgeSocket, list[tuple[str, str, str]]] = field(default_factory=dict)  # rule 4
    skips: dict[EdgeSocket, set[str]] = field(default_factory=dict)  # the client replay's ids


class InProcessRelay(Relay):
    def __init__(
        self,
        replay_frames: int = 2048,
        dedupe_window: int = 4096,
        replay_bytes: int = SESSION_BYTES,
        replay_total_bytes: int = TOTAL_BYTES,
    ) -> None:
        self._replay_frames = replay_frames
        self._dedupe_window = dedupe_window
        self.replay_budget = ReplayBudget(replay_frames, replay_bytes, replay_total_bytes)
        self._hubs: dict[str, _Hub] = {}
        self._by_node: dict[str, set[EdgeSocket]] = {}
        self._order = itertools.count(1)  # one order for session and node frames (rule 4)
        self._node_recent: dict[str, deque[tuple[int, str]]] = {}

    def _hub(self, session_id: str) -> _Hub:
        hub = self._hubs.get(session_id)
        if hub is None:
            hub = self._hubs[session_id] = _Hub()
        return hub

    async def attach(self, edge: EdgeSocket, last_message_id: str | None = None) -> None:
        hub = self._hub(edge.session_id)
        # Until registration, no await except the client's replay, during which live frames
        # are held for this socket: none falls between the replay and the live stream.
        if not last_message_id:
            for text in self.greeting(edge.session_id):
                edge.offer(text)
        elif (kept := self._kept_after(hub, edge.node_id, last_message_id)) is not None:
            edge.replayed = len(kept)
            edge.offer(history_frame(edge.session_id, last_message_id, len(kept)))
            for text in kept:
                edge.offer(text)
        else:
            held = hub.holding[edge] = []
            try:
                kept_all = [text for _, text, _ in hub.recent]
                evicted = hub.recent.evicted
                replayed = set(
                    await resume_from_client(self, edge, last_message_id, kept_all, evicted)
                )
            finally:
                hub.holding.pop(edge, None)
            if self._hubs.get(edge.session_id) is not hub:  # it ended while we asked
                edge.kick(GOING_AWAY, "session ended")
                return
            for message_id, text, kind in held:
                if replayed and message_id in replayed:
                    continue
                if kind not in NOT_A_CURSOR:
                    replayed = set()  # past the client's replay: later frames are all new
                edge.offer(text)
            if replayed:
                hub.skips[edge] = replayed
        self.go_live(edge)

    def go_live(self, edge: EdgeSocket) -> None:
        """From now on `edge` gets the session's and its node's live frames (rules 1, 2)."""
        self._hub(edge.session_id).edges.add(edge)
        self._by_node.setdefault(edge.node_id, set()).add(edge)

    def _kept_after(self, hub: _Hub, node_id: str, last_message_id: str) -> list[str] | None:
        """The session's kept frames after the cursor merged with the node's frames since, in
        the order they were published; None when the cursor is not kept (rule 4)."""
        recent = list(hub.recent)
        at = next((i for i, entry in enumerate(recent) if entry[0] == last_message_id), None)
        if at is None:
            return None
        since = recent[at][2]
        merged = [(order, text) for _, text, order in recent[at + 1 :]]
        merged += [entry for entry in self._node_recent.get(node_id, ()) if entry[0] > since]
        return [text for _, text in sorted(merged, key=lambda entry: entry[0])]

    async def greeting_texts(self, session_id: str) -> list[str]:
        return self.greeting(session_id)

    def detach(self, edge: EdgeSocket) -> None:
        hub = self._hubs.get(edge.session_id)
        if hub is not None:
            hub.edges.discard(edge)
            hub.skips.pop(edge, None)
        node = self._by_node.get(edge.node_id)
        if node is not None:
            node.discard(edge)
            if not node:
                del self._by_node[edge.node_id]

    def publish(self, session_id: str, message_id: str, text: str, kind: str = "") -> None:
        hub = self._hub(session_id)
        self.replay_budget.keep(hub.recent, message_id, text, next(self._order))
        for held in hub.holding.values():
            held.append((message_id, text, kind))
        for edge in list(hub.edges):
            skip = hub.skips.get(edge)
            if skip is not None:
                if message_id in skip:
                    continue  # the client's replay had it (rule 4)
                if kind not in NOT_A_CURSOR:
                    del hub.skips[edge]
            edge.offer(text)

    async def publish_node(self, node_id: str, text: str) -> int:
        self.keep_node_frame(node_id, text)
        return self.offer_node(node_id, text)

    def keep_node_frame(self, node_id: str, text: str) -> None:
        """Rule 4: a node frame is replayed to an edge of the node that reconnects."""
        kept = self._node_recent.setdefault(node_id, deque(maxlen=NODE_FRAMES_KEPT))
        kept.append((next(self._order), text))

    def offer_node(self, node_id: str, text: str) -> int:
        edges = list(self._by_node.get(node_id, ()))
        return sum(1 for edge in edges if edge.offer(text))

    async def to_client(self, session_id: str, text: str) -> bool:
        client = self.client_of(session_id)
        return client is not None and await client.send(text)

    def client_of(self, session_id: str) -> ClientSide | None:
        """The session's client link when this process holds it (rule 6)."""
        hub = self._hubs.get(session_id)
        return hub.client if hub is not None else None

    def bind_client(self, session_id: str, link: ClientSide) -> None:
        self._hub(session_id).client = link

    def unbind_client(self, session_id: str) -> None:
        hub = self._hubs.get(session_id)
        if hub is not None:
            hub.client = None

    def remember_greeting(self, session_id: str, type: str, text: str) -> None:
        self._hub(session_id).greeting[type] = text

    def greeting(self, session_id: str) -> list[str]:
        hub = self._hub(session_id)
        return [hub.greeting[t] for t in GREETING_TYPES if t in hub.greeting]

    def replay(self, session_id: str, last_message_id: str) -> tuple[list[str], bool]:
        recent = [(message_id, text) for message_id, text, _ in self._hub(session_id).recent]
        return replay_after(recent, last_message_id)

    async def claim_control(self, session_id: str, message_id: str) -> bool:
        controls = self._hub(session_id).controls
        if message_id in controls:
            return False
        controls[message_id] = None
        while len(controls) > self._dedupe_window:
            controls.popitem(last=False)  # bounded memory: the oldest ids go first
        return True

    async def release_control(self, session_id: str, message_id: str) -> None:
        hub = self._hubs.get(session_id)
        if hub is not None:
            hub.controls.pop(message_id, None)

    def edges(self, session_id: str) -> list[EdgeSocket]:
        hub = self._hubs.get(session_id)
        return list(hub.edges) if hub else []

    def forget_session(self, session_id: str, code: int, reason: str) -> None:
        hub = self._hubs.pop(session_id, None)
        if hub is None:
            return
        self.replay_budget.forget(hub.recent)
        for edge in hub.edges:
            edge.kick(code, reason)

    def sessions(self) -> Iterable[str]:
        return list(self._hubs)
