"""Where frames meet their sockets (RAWP §9.4.3, §9.4.4): the relay interface and its
in-process implementation.

`Relay` is the seam: the `InProcessRelay` here keeps every socket in this process's memory; a
Redis-backed relay for several master replicas (issue 9) implements the same methods, so that
a session's frames reach whichever replica holds each edge socket.

Rules of the in-process relay:

1. `publish` offers one client frame's original text to every edge socket of the session
   (fan-out, E-WS-10) and keeps it in a bounded ring for edges that reconnect with
   `last_message_id`. Offering never waits (edge_socket rule 1).
2. `publish_node` offers a master frame to every edge socket connected to any session of the
   node (E-NOT-01, E-NOT-04): one copy per socket, the same `message_id` on each (A-26).
3. `to_client` hands an edge frame to the session's client link; False when there is none.
4. `greeting` holds, per session, the latest `session.capabilities`, `tool.catalog.publish`
   and `agent.commands.publish`, which a socket attaching later has not seen.
"""

from __future__ import annotations

import abc
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from master.edge.edge_socket import EdgeSocket

GREETING_TYPES = ("session.capabilities", "tool.catalog.publish", "agent.commands.publish")


class ClientSide(Protocol):
    """The master's link to the client for one session (master.edge.client_link)."""

    async def send(self, text: str) -> bool: ...


class Relay(abc.ABC):
    @abc.abstractmethod
    def attach(self, edge: EdgeSocket) -> None: ...

    @abc.abstractmethod
    def detach(self, edge: EdgeSocket) -> None: ...

    @abc.abstractmethod
    def publish(self, session_id: str, message_id: str, text: str) -> None:
        """A client frame, forwarded unchanged to every edge socket of the session."""

    @abc.abstractmethod
    def publish_node(self, node_id: str, text: str) -> int:
        """A master frame for every edge socket of the node; returns how many got it."""

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
    def greeting(self, session_id: str) -> list[str]:
        """The greeting frames a socket attaching now has not seen (rule 4)."""

    @abc.abstractmethod
    def replay(self, session_id: str, last_message_id: str) -> tuple[list[str], bool]:
        """The kept frames after `last_message_id`, and whether it was found.

        When it was not, every kept frame is returned; the edge drops those it already has by
        `message_id`.
        """

    @abc.abstractmethod
    def edges(self, session_id: str) -> list[EdgeSocket]: ...

    @abc.abstractmethod
    def forget_session(self, session_id: str, code: int, reason: str) -> None:
        """The session ended: kick its edge sockets with `code`/`reason` and drop its state."""


@dataclass
class _Hub:
    edges: set[EdgeSocket] = field(default_factory=set)
    client: ClientSide | None = None
    greeting: dict[str, str] = field(default_factory=dict)
    recent: deque = field(default_factory=deque)  # (message_id, text)


class InProcessRelay(Relay):
    def __init__(self, replay_frames: int = 2048) -> None:
        self._replay_frames = replay_frames
        self._hubs: dict[str, _Hub] = {}
        self._by_node: dict[str, set[EdgeSocket]] = {}

    def _hub(self, session_id: str) -> _Hub:
        hub = self._hubs.get(session_id)
        if hub is None:
            hub = self._hubs[session_id] = _Hub(recent=deque(maxlen=self._replay_frames))
        return hub

    def attach(self, edge: EdgeSocket) -> None:
        self._hub(edge.session_id).edges.add(edge)
        self._by_node.setdefault(edge.node_id, set()).add(edge)

    def detach(self, edge: EdgeSocket) -> None:
        hub = self._hubs.get(edge.session_id)
        if hub is not None:
            hub.edges.discard(edge)
        node = self._by_node.get(edge.node_id)
        if node is not None:
            node.discard(edge)
            if not node:
                del self._by_node[edge.node_id]

    def publish(self, session_id: str, message_id: str, text: str) -> None:
        hub = self._hub(session_id)
        hub.recent.append((message_id, text))
        for edge in list(hub.edges):
            edge.offer(text)

    def publish_node(self, node_id: str, text: str) -> int:
        edges = list(self._by_node.get(node_id, ()))
        return sum(1 for edge in edges if edge.offer(text))

    async def to_client(self, session_id: str, text: str) -> bool:
        hub = self._hubs.get(session_id)
        if hub is None or hub.client is None:
            return False
        return await hub.client.send(text)

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
        recent = list(self._hub(session_id).recent)
        ids = [message_id for message_id, _ in recent]
        found = last_message_id in ids
        start = ids.index(last_message_id) + 1 if found else 0
        return [text for _, text in recent[start:]], found

    def edges(self, session_id: str) -> list[EdgeSocket]:
        hub = self._hubs.get(session_id)
        return list(hub.edges) if hub else []

    def forget_session(self, session_id: str, code: int, reason: str) -> None:
        hub = self._hubs.pop(session_id, None)
        if hub is None:
            return
        for edge in hub.edges:
            edge.kick(code, reason)

    def sessions(self) -> Iterable[str]:
        return list(self._hubs)
