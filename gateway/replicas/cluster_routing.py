"""Any replica answers any event; the session's renderer acts on it (issue 19 §2–3).

`ClusterHooks` is what the adapters call when the gateway runs as a cluster (rawp_app.launch);
it wraps the `ConversationService`. Rules:

1. Verbs that need the live session — prompt, stop, end, mode, model, file search, the agent's
   commands, a button press nobody waits for here — run where the session is rendered: here when
   this replica holds the session's lease or can claim it (nobody holds it), else they are
   forwarded over the bus (gateway.replicas.cluster_redis) to the holder, which runs them as its own
   and replies with the text (or list) the user is shown. Every other verb runs here.
2. A holder that does not answer within `REQUEST_TIMEOUT_S` is waited out: once its lease
   expires this replica claims the session and runs the verb itself, for up to
   `ROUTE_WAIT_S`. A prompt keeps the `message_id` this replica gave it on the first try, and
   the master and the client drop a control frame whose `message_id` they saw (E-WS-11,
   A-25; master.edge.links.dataplane, client.sessions.stream), so a prompt the dead holder had
   sent is not sent to the agent twice.
3. A press of a button posted by another replica reaches the holder's prompt board first
   (`ChatPlatform.deliver_choice`): the wait there resolves, closes the prompt and audits it
   as if the press had arrived there; only when nobody waits there either does the stale path
   run (`stale_choice`, answered through the session). A wrong presser is refused by the
   holder, in the thread, mentioning them (the click's private reply belongs to the replica
   that received it; Slack has no such tie, and on Discord it is a documented difference).
4. Takeover: every `SWEEP_S` each replica lists the open conversations of its platform whose
   lease is free. The preferred replica (gateway.replicas.cluster placement over the live replicas)
   claims one at once; any other replica claims one that stayed free for `GRACE_S` (the
   preferred one may be the dead one, still in the registry). `SET NX` leaves one winner,
   which revives the session with a fresh ticket and the durable cursor, as `resume` does
   after a restart: the renderer posts only what is missing (gateway.rendering.posting).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.edge_client import EdgeApiError
from gateway.platform import (
    Choice,
    ConversationHooks,
    ConversationRef,
    Invocation,
    MessageRef,
    StaleChoice,
)
from gateway.replicas.cluster import HeldElsewhere, Unreachable, placement
from gateway.sessions.conversations import ConversationService
from rawp.clock import new_id
from rawp.events import Command, FileCandidate, PromptRequest

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 4.0
QUICK_TIMEOUT_S = 2.0  # an autocomplete's forwarded request: Discord wants its answer in 3 s
ROUTE_WAIT_S = 20.0  # a lease (3 s) + a takeover, with room for a loaded machine
RETRY_S = 0.25
SWEEP_S = 1.0
GRACE_S = 1.5
BUSY = "⏳ This conversation is moving to another gateway replica; try again in a moment."


# --- the wire form of what a verb needs ------------------------------------------------------


def _conv(ref: ConversationRef) -> list:
    return [ref.platform, ref.channel_id, ref.thread_id]


def _unconv(data: list) -> ConversationRef:
    return ConversationRef(data[0], data[1], data[2])


def encode_invocation(invocation: Invocation) -> dict:
    message = invocation.message
    return {
        "user": invocation.user_id,
        "conversation": _conv(invocation.conversation),
        "message": [_conv(message.conversation), message.message_id] if message else None,
        "workspace": invocation.workspace_id,
    }


def decode_invocation(data: dict) -> Invocation:
    message = data.get("message")
    return Invocation(
        str(data["user"]),
        _unconv(data["conversation"]),
        MessageRef(_unconv(message[0]), message[1]) if message else None,
        data.get("workspace"),
    )


def encode_stale(stale: StaleChoice) -> dict:
    choice = stale.choice
    return {
        "invocation": encode_invocation(stale.invocation),
        "interaction": stale.interaction_id,
        "choice": [choice.user_id, choice.option_id, choice.text],
    }


def decode_stale(data: dict) -> StaleChoice:
    user, option, text = data["choice"]
    return StaleChoice(
        decode_invocation(data["invocation"]), str(data["interaction"]), Choice(user, option, text)
    )


class LocalHooks(ConversationHooks):
    """The verbs that run on the replica the event arrived at: they start sessions (a new id
    nobody holds, or a thread whose session ended) or touch no session at all."""

    service: ConversationService

    async def start_session(self, invocation, node, agent, worktree=False):
        return await self.service.start_session(invocation, node, agent, worktree)

    async def pair(self, invocation):
        return await self.service.pair(invocation)

    async def web_link(self, invocation):
        return await self.service.web_link(invocation)

    async def list_nodes(self, invocation):
        return await self.service.list_nodes(invocation)

    async def list_sessions(self, invocation):
        return await self.service.list_sessions(invocation)

    async def suggest_nodes(self, invocation, typed):
        return await self.service.suggest_nodes(invocation, typed)

    async def suggest_agents(self, invocation, node, typed):
        return await self.service.suggest_agents(invocation, node, typed)

    async def usage(self, invocation):
        return await self.service.usage(invocation)

    async def set_busy(self, invocation, mode):
        return await self.service.set_busy(invocation, mode)

    async def schedule(self, invocation, text):  # the master keeps schedules: any replica
        return await self.service.schedule(invocation, text)

    async def resume_session(self, invocation, pick=None):  # the ended session: held by no one
        return await self.service.resume_session(invocation, pick)

    async def suggest_terminal(self, invocation, typed):  # asks the master only
        return await self.service.suggest_terminal(invocation, typed)

    async def fork_session(self, invocation):  # the copy is a new session in a new thread
        return await self.service.fork_session(invocation)


class ClusterHooks(LocalHooks):
    def __init__(self, service: ConversationService) -> None:
        self.service = service
        self.cluster = service.cluster
        self._free_since: dict[str, float] = {}  # session_id → when a sweep first saw it free

    # --- rule 1: routed verbs ----------------------------------------------------------------

    async def prompt(self, invocation: Invocation, request: PromptRequest) -> str | None:
        prompt_id = new_id()  # rule 2: the same frame id on every try
        body = {"request": request.model_dump(mode="json"), "prompt_id": prompt_id}
        reply = await self._route(
            invocation,
            "prompt",
            body,
            lambda: self.service.prompt(invocation, request, prompt_id),
        )
        return reply

    async def stop(self, invocation: Invocation) -> str | None:
        return await self._route(invocation, "stop", {}, lambda: self.service.stop(invocation))

    async def end(self, invocation: Invocation) -> str | None:
        return await self._route(invocation, "end", {}, lambda: self.service.end(invocation))

    async def set_mode(self, invocation: Invocation, mode: str | None) -> str | None:
        return await self._route(
            invocation, "mode", {"mode": mode}, lambda: self.service.set_mode(invocation, mode)
        )

    async def set_model(self, invocation: Invocation, model: str | None) -> str | None:
        return await self._route(
            invocation, "model", {"model": model}, lambda: self.service.set_model(invocation, model)
        )

    async def suggest_models(self, invocation, typed):  # from the store: any replica
        return await self.service.suggest_models(invocation, typed)

    async def worktree(self, invocation: Invocation, action: str | None) -> str | None:
        return await self._route(
            invocation,
            "worktree",
            {"action": action},
            lambda: self.service.worktree(invocation, action),
        )

    async def search_files(self, invocation: Invocation, typed: str) -> list[FileCandidate]:
        found = await self._route(
            invocation,
            "search_files",
            {"typed": typed},
            lambda: self.service.search_files(invocation, typed),
            quick=True,
        )
        return [FileCandidate.model_validate(f) if isinstance(f, dict) else f for f in found or []]

    async def agent_commands(self, invocation: Invocation) -> list[Command]:
        found = await self._route(
            invocation,
            "agent_commands",
            {},
            lambda: self.service.agent_commands(invocation),
            quick=True,
        )
        return [Command.model_validate(c) if isinstance(c, dict) else c for c in found or []]

    async def stale_choice(self, stale: StaleChoice) -> str | None:
        return await self._route(
            stale.invocation,
            "choice",
            {"stale": encode_stale(stale)},
            lambda: self.service.stale_choice(stale),
        )

    async def _route(
        self,
        invocation: Invocation,
        kind: str,
        body: dict,
        here: Callable[[], Awaitable[Any]],
        *,
        quick: bool = False,
    ) -> Any:
        """Rules 1 and 2: run `here` where the session renders; `quick` (autocompletes, due
        within Discord's 3 s) gives up after 2 s instead of waiting a takeover."""
        binding = await self.service._binding(invocation)
        if isinstance(binding, str):
            return await here()  # no open session: the verb says so itself
        session_id = binding.session_id
        loop = asyncio.get_running_loop()
        timeout_s = QUICK_TIMEOUT_S if quick else REQUEST_TIMEOUT_S
        give_up = loop.time() + (QUICK_TIMEOUT_S if quick else ROUTE_WAIT_S)
        body = {**body, "invocation": encode_invocation(invocation)}
        while True:
            holder = (
                None if session_id in self.service.live else await self.cluster.holder(session_id)
            )
            if holder in (None, self.cluster.me):
                try:
                    return await here()
                except HeldElsewhere:
                    pass  # claimed by another replica just now: ask it
            else:
                try:
                    reply = await self.cluster.request(holder, kind, body, timeout_s)
                except Unreachable as exc:
                    log.info("session %s: %s (%s); waiting for its lease", session_id, kind, exc)
                else:
                    if "error" not in reply:
                        return reply.get("result")
            if loop.time() >= give_up:
                return [] if quick else BUSY
            await asyncio.sleep(RETRY_S)

    # --- rule 1, the holder's side ---------------------------------------------------------

    async def handle(self, kind: str, body: dict) -> dict:
        """A forwarded verb, run here as if its event had arrived here."""
        invocation = decode_invocation(body["invocation"])
        service = self.service
        runs: dict[str, Callable[[], Awaitable[Any]]] = {
            "prompt": lambda: service.prompt(
                invocation, PromptRequest.model_validate(body["request"]), body["prompt_id"]
            ),
            "stop": lambda: service.stop(invocation),
            "end": lambda: service.end(invocation),
            "mode": lambda: service.set_mode(invocation, body.get("mode")),
            "model": lambda: service.set_model(invocation, body.get("model")),
            "worktree": lambda: service.worktree(invocation, body.get("action")),
            "search_files": lambda: service.search_files(invocation, body["typed"]),
            "agent_commands": lambda: service.agent_commands(invocation),
            "choice": lambda: self._choice(decode_stale(body["stale"])),
        }
        run = runs.get(kind)
        if run is None:
            return {"error": f"unknown request {kind}"}
        binding = await service._binding(invocation)
        if not isinstance(binding, str) and not self.cluster.valid(binding.session_id):
            return {"error": "not the holder"}  # it moved (or we stalled): the asker looks again
        try:
            result = await run()
        except HeldElsewhere:
            return {"error": "not the holder"}
        if isinstance(result, list):
            result = [item.model_dump(mode="json") for item in result]
        return {"result": result}

    async def _choice(self, stale: StaleChoice) -> str | None:
        """Rule 3: the holder's own prompt board first, then the stale path."""
        platform = self.service.platform
        conversation = stale.invocation.conversation
        if platform is not None and platform.deliver_choice(
            conversation, stale.interaction_id, stale.choice
        ):
            return None
        return await self.service.stale_choice(stale)

    # --- rule 4: takeover --------------------------------------------------------------------

    async def sweep(self) -> None:
        """Every SWEEP_S until cancelled."""
        while True:
            try:
                await self.sweep_once()
            except Exception:  # Redis or the store away for a moment: the next sweep tries
                log.warning("replica %s: takeover sweep failed", self.cluster.me, exc_info=True)
            await asyncio.sleep(SWEEP_S)

    async def sweep_once(self) -> int:
        """Claim the free sessions this replica should render now; how many went live."""
        service = self.service
        name = service.platform.name if service.platform is not None else None
        bindings = [
            b
            for b in await service.store.open_bindings()
            if b.conversation.platform == name and b.session_id not in service.live
        ]
        holders = await self.cluster.holders([b.session_id for b in bindings])
        replicas = await self.cluster.replicas()
        now = asyncio.get_running_loop().time()
        free = {b.session_id for b, h in zip(bindings, holders, strict=True) if h is None}
        self._free_since = {sid: self._free_since.get(sid, now) for sid in free}
        revived = 0
        for binding in bindings:
            sid = binding.session_id
            if sid not in free:
                continue
            preferred = placement(sid, replicas) == self.cluster.me
            if not preferred and now - self._free_since[sid] < GRACE_S:
                continue
            try:
                await service._revive(binding)
                revived += 1
            except HeldElsewhere:
                pass  # another replica won it
            except EdgeApiError as exc:
                log.info("session %s not taken over: %s", sid, exc)
        return revived

    async def start_here(self, invocation, request):
        try:
            return await self.service.start_here(invocation, request)
        except HeldElsewhere:  # a mention in a thread another replica renders
            return await self.prompt(invocation, request)


async def join_cluster(service: ConversationService, url: str, prefix: str, owner) -> ClusterHooks:
    """The service as one replica of a cluster on Redis at `url`: its hooks for the adapter
    (run `sweep()` beside the bot, `close()` the cluster after the service)."""
    # Only a clustered gateway imports redis.
    from gateway.replicas.cluster_redis import RedisCluster

    cluster = RedisCluster(url, prefix)
    service.cluster = cluster
    hooks = ClusterHooks(service)
    if not owner.running:
        await owner.start()
    try:
        await cluster.start(owner, service.lease_lost, hooks.handle)
    except BaseException:
        await cluster.close()
        raise
    return hooks
