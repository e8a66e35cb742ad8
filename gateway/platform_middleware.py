"""The one seam every wrapper of a `ChatPlatform` stands on (issue 29 §3): the operations a
platform performs, declared once (`OPS`), and `PlatformMiddleware`, whose every operation passes
one hook, `around`.

A wrapper (redaction: gateway.redaction.redacting_platform; the shared budget:
gateway.replicas.budgeted_platform; the platform-call metrics: gateway.metrics) says only what
it does around a call. The forwarding of each operation to the platform it wraps is made here,
from the table, so an operation added to `ChatPlatform` and to `OPS` passes every wrapper with
no forwarder written for it (tests/gateway/test_platform_middleware.py checks both).

Rules:

1. Every public method of `ChatPlatform` is an operation of `OPS` or a local answer (`LOCAL`).
2. An operation's entry says which argument names where the call goes (`about`: a conversation
   or a message in one) and which arguments carry text people will see (`texts`, by kind): a
   wrapper reads the table, never a method's own parameter list.
3. `around(call, proceed)` gets the call (its operation and arguments by name) and either
   proceeds, with the arguments as they are or replaced (`call.with_args`), or answers itself
   (a budget dropping a late typing indicator). `proceed` calls the wrapped platform.
4. Local answers (`where_of`, `deliver_choice`) route a press to the prompt board the adapter
   keys (gateway.replicas.cluster_routing rule 3): they call no platform, pass no hook, and are
   the innermost platform's own, never `ChatPlatform`'s defaults in its place.
5. What only an adapter has (Discord's `online`, Slack's `show_prompt`) reads through, as do
   the declarations (`name`, `limits`, `prompt_board`, `rate_routes`).
"""

from __future__ import annotations

import abc
import enum
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.platform import ChatPlatform, ConversationRef, MessageRef


class Text(enum.Enum):
    """What kind of text an argument carries (rule 2)."""

    BODY = "body"  # a message's content, already cut to the limit by the renderer
    LINE = "line"  # any other text shown: a title, a note, a status (None: nothing shown)
    PROMPT = "prompt"  # an InteractionPrompt: its question and its buttons' labels
    FILE = "file"  # a file's bytes, of the type the call's `mime_type` argument names


@dataclass(frozen=True)
class Op:
    """One operation of `ChatPlatform` (rule 2)."""

    name: str
    about: str  # the argument naming where it goes: a ConversationRef or a MessageRef
    texts: Mapping[str, Text] = field(default_factory=dict)


_B, _L, _P, _F = Text.BODY, Text.LINE, Text.PROMPT, Text.FILE
OPS: dict[str, Op] = {
    op.name: op
    for op in (
        Op("send_message", "conversation", {"text": _B}),
        Op("send_keyed", "conversation", {"text": _B}),
        Op("find_keyed", "conversation"),
        Op("upload_file", "conversation", {"name": _L, "data": _F}),
        Op("upload_keyed", "conversation", {"name": _L, "data": _F}),
        Op("edit_message", "message", {"text": _B}),
        Op("delete_message", "message"),
        Op("send_hidden", "conversation", {"title": _L, "text": _L}),
        Op("send_ephemeral", "conversation", {"text": _L}),
        Op("approvers", "conversation"),
        Op("add_reaction", "message"),
        Op("remove_reaction", "message"),
        Op("trigger_typing", "conversation"),
        Op("set_status", "conversation", {"text": _L}),
        Op("send_interaction", "conversation", {"prompt": _P}),
        Op("send_interaction_keyed", "conversation", {"prompt": _P}),
        Op("wait_for_choice", "message"),
        Op("close_interaction", "message", {"outcome": _L}),
        Op("show_modes", "conversation", {"text": _L}),
        Op("open_thread", "conversation", {"title": _L}),
        Op("open_thread_on", "message", {"title": _L}),
    )
}
LOCAL = ("where_of", "deliver_choice")  # rule 4


@dataclass(frozen=True)
class PlatformCall:
    """One call of an operation, its arguments by name (rule 3)."""

    op: Op
    args: Mapping[str, Any]

    @property
    def conversation(self) -> ConversationRef:
        """Where the call goes (a message's conversation for a message)."""
        where = self.args[self.op.about]
        return where.conversation if isinstance(where, MessageRef) else where

    def with_args(self, **changed: Any) -> PlatformCall:
        return PlatformCall(self.op, {**self.args, **changed})


Proceed = Callable[[PlatformCall], Awaitable[Any]]


class PlatformMiddleware(ChatPlatform):
    """A `ChatPlatform` around another; subclasses override `around` only (rules 3–5)."""

    def __init__(self, inner: ChatPlatform) -> None:
        self.inner = inner
        self.name = inner.name
        self.limits = inner.limits
        self.user_ids_per_workspace = inner.user_ids_per_workspace
        self.prompt_board = inner.prompt_board
        self.rate_routes = inner.rate_routes

    async def around(self, call: PlatformCall, proceed: Proceed) -> Any:
        return await proceed(call)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a copy being made): no recursion through it
            raise AttributeError(name)
        return getattr(self.inner, name)  # rule 5

    def where_of(self, conversation: ConversationRef):
        return self.inner.where_of(conversation)

    def deliver_choice(self, conversation: ConversationRef, interaction_id: str, choice):
        return self.inner.deliver_choice(conversation, interaction_id, choice)


def _through_the_hook(op: Op, seam: type) -> Callable[..., Awaitable[Any]]:
    """The method for `op`: its arguments bound by its signature on `seam`, the call passed to
    `around`, and the wrapped platform's own method called by `proceed`."""
    declared = getattr(seam, op.name)
    signature = inspect.signature(declared)

    async def method(self: PlatformMiddleware, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        del bound.arguments["self"]

        async def proceed(call: PlatformCall) -> Any:
            return await getattr(self.inner, op.name)(*call.args.values())

        return await self.around(PlatformCall(op, dict(bound.arguments)), proceed)

    method.__name__ = op.name
    method.__qualname__ = f"PlatformMiddleware.{op.name}"
    method.__doc__ = declared.__doc__
    method.__signature__ = signature  # type: ignore[attr-defined]
    return method


def install_ops(middleware: type, seam: type, ops: Iterable[Op]) -> None:
    """Give `middleware` one method per operation of `ops` (declared on `seam`), each through
    its `around`: the only place a wrapper's methods are made."""
    for op in ops:
        setattr(middleware, op.name, _through_the_hook(op, seam))
    abc.update_abstractmethods(middleware)


install_ops(PlatformMiddleware, ChatPlatform, OPS.values())
