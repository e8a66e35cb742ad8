"""What reaches a replica on its Redis channels, each to the part whose rule it is
(redis_relay rules 3, 4, 5).

- `e:<session>`: the session's frames, to the edge sockets here (redis_attachments);
- `c:<session>`: an edge frame for the client link held here, taken in an owned task, as the
  link may wait for a reattach (redis_handoffs rule 2);
- `r:<replica>`: the answer to one of this replica's hand-offs (redis_handoffs rule 3);
- the bus: node pushes to the node's sockets here; another replica's node unregistration and
  session end, told to the session layer (OwnerHooks) — this replica's own are not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from runtime.tasks import TaskOwner

if TYPE_CHECKING:
    from master.edge.replicas.redis_relay import RedisRelay


class Inbox:
    def __init__(self, relay: RedisRelay, tasks: TaskOwner) -> None:
        self._relay = relay
        self._tasks = tasks

    async def handle(self, channel: str, data: str) -> None:
        """The reader's handler (redis_subscriptions rule 3): never waits on a client."""
        relay = self._relay
        prefix = relay.keys.prefix
        if channel.startswith(prefix + "e:"):
            relay.attachments.deliver(channel[len(prefix) + 2 :], data)
        elif channel.startswith(prefix + "c:"):
            session_id = channel[len(prefix) + 2 :]
            self._tasks.spawn(relay.handoffs.take(session_id, data), name="edge frame hand-off")
        elif channel == relay.keys.replies(relay.me):
            relay.handoffs.answered(data)
        elif channel == relay.keys.bus:
            self._on_bus(orjson.loads(data))

    def _on_bus(self, message: dict[str, Any]) -> None:
        relay = self._relay
        assert relay.hooks is not None
        if "node" in message:
            relay.offer_node(message["node"], message["text"])
        elif "node_closed" in message and message.get("from") != relay.me:
            node_id = message["node_closed"]
            self._tasks.spawn(relay.hooks.node_closed(node_id), name=f"node {node_id} closed")
        elif "end" in message and message.get("from") != relay.me:
            session_id = message["end"]
            relay.leases.forget(session_id)
            relay.drop_local(session_id, message["code"], message["reason"])
            self._tasks.spawn(relay.hooks.session_ended(session_id), name=f"{session_id} ended")
