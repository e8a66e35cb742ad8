"""The one platform seam (gateway.platform_middleware): every operation of `ChatPlatform` is in
the operation table, and every wrapper (redaction, budget, metrics) sees every operation through
its one hook, with no forwarder written by hand; an operation added to the table is wrapped the
same way."""

from __future__ import annotations

import inspect

import pytest

from adapters.slack.routes import ROUTES as SLACK_ROUTES
from gateway.metrics import GatewayMetrics, PlatformOpMetrics
from gateway.platform import (
    ChatPlatform,
    Choice,
    ChoiceOption,
    ConversationRef,
    InteractionPrompt,
    MessageRef,
    ModeRow,
    PlatformLimits,
)
from gateway.platform_middleware import (
    LOCAL,
    OPS,
    Op,
    PlatformMiddleware,
    Text,
    install_ops,
)
from gateway.redaction.redact import Redactor
from gateway.redaction.redacting_platform import RedactingPlatform
from gateway.replicas.budget_queue import BudgetQueue
from gateway.replicas.budgeted_platform import KIND_OF_OP, KINDS, UNSPENT, BudgetedPlatform
from gateway.replicas.platform_budget import Limit, MemoryBuckets
from runtime.tasks import TaskOwner

SECRET = "ghp_Q7wE9rT2yU4iO6pA8sD0fG1hJ3kL5zX7cV9b"
HERE = ConversationRef("slack", "C1")
MESSAGE = MessageRef(HERE, "1.0001")
PROMPT = InteractionPrompt("i-1", "approval", f"run {SECRET}?", (ChoiceOption("a", SECRET),))
SAMPLE = {  # one value per parameter name of the operations
    "conversation": HERE,
    "message": MESSAGE,
    "text": f"a {SECRET} b",
    "key": "k1",
    "name": f"{SECRET}.txt",
    "mime_type": "text/plain",
    "data": SECRET.encode(),
    "title": f"t {SECRET}",
    "user_id": "U1",
    "emoji": "✅",
    "prompt": PROMPT,
    "timeout_s": 1.0,
    "outcome": f"o {SECRET}",
    "note": f"n {SECRET}",
    "row": ModeRow(("plan", "ask"), "plan"),
}


def public_methods(cls: type) -> set[str]:
    return {n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")}


def test_every_chat_platform_method_is_in_the_table():
    assert public_methods(ChatPlatform) == set(OPS) | set(LOCAL)
    for op in OPS.values():
        parameters = inspect.signature(getattr(ChatPlatform, op.name)).parameters
        assert op.about in parameters, op.name
        assert set(op.texts) <= set(parameters), op.name


def test_no_wrapper_forwards_an_operation_by_hand():
    for wrapper in (RedactingPlatform, BudgetedPlatform, PlatformOpMetrics):
        written = [name for name in OPS if name in wrapper.__dict__]
        assert written == [], f"{wrapper.__name__} forwards {written} itself"


def test_the_budget_names_a_kind_for_every_operation_that_calls_the_platform():
    assert set(KIND_OF_OP) | UNSPENT == set(OPS)
    assert set(KIND_OF_OP.values()) <= set(KINDS)
    assert set(SLACK_ROUTES.calls) <= set(KINDS)  # adapters spend kinds the core knows


class Recording(ChatPlatform):
    """Every operation answers and records what it was handed."""

    name = "slack"
    limits = PlatformLimits(max_message_length=100)
    rate_routes = SLACK_ROUTES

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []


def _recorder(name: str):
    async def method(self, *args):
        self.calls.append((name, args))
        return Choice("U1") if name == "wait_for_choice" else MESSAGE

    return method


for _name in OPS:
    setattr(Recording, _name, _recorder(_name))
Recording.__abstractmethods__ = frozenset()


def watched(wrapper: type) -> type:
    class Watched(wrapper):
        async def around(self, call, proceed):
            self.seen.append(call.op.name)
            return await super().around(call, proceed)

    return Watched


def arguments(op_name: str, seam: type = ChatPlatform) -> list:
    parameters = list(inspect.signature(getattr(seam, op_name)).parameters)[1:]
    return [SAMPLE[name] for name in parameters]


async def wrappers(inner: ChatPlatform):
    owner = TaskOwner("test", None)
    await owner.start()
    queue = BudgetQueue(MemoryBuckets(), owner)
    limits = {route: Limit(1000.0, 1000) for route in SLACK_ROUTES.limits}
    return owner, [
        watched(RedactingPlatform)(inner, Redactor()),
        watched(BudgetedPlatform)(inner, queue, limits),
        watched(PlatformOpMetrics)(inner, GatewayMetrics()),
    ]


async def test_every_operation_passes_every_wrappers_hook():
    inner = Recording()
    owner, stack = await wrappers(inner)
    try:
        for platform in stack:
            platform.seen = []
            inner.calls.clear()
            for name in OPS:
                await getattr(platform, name)(*arguments(name))
            assert platform.seen == list(OPS), type(platform).__mro__[1].__name__
            assert [name for name, _ in inner.calls] == list(OPS)
    finally:
        await owner.close()


async def test_redaction_reaches_every_text_the_table_names_and_nothing_else():
    inner = Recording()
    redacting = RedactingPlatform(inner, Redactor())
    for name in OPS:
        await getattr(redacting, name)(*arguments(name))
    for name, handed in inner.calls:
        op = OPS[name]
        parameters = list(inspect.signature(getattr(ChatPlatform, name)).parameters)[1:]
        for parameter, value in zip(parameters, handed, strict=True):
            if parameter in op.texts:
                assert SECRET not in repr(value), f"{name}({parameter}) not redacted"
            else:
                assert value == SAMPLE[parameter], f"{name}({parameter}) changed"


class Pinning(ChatPlatform):
    async def pin_message(self, message: MessageRef, note: str) -> None:
        """A new operation, added to a platform and to the table only."""


PIN = Op("pin_message", "message", {"note": Text.LINE})


class PinningRecording(Recording, Pinning):
    pass


PinningRecording.pin_message = _recorder("pin_message")


async def test_an_operation_added_to_the_table_is_wrapped_without_a_forwarder():
    class PinningRedaction(RedactingPlatform):
        pass

    install_ops(PinningRedaction, Pinning, [PIN])
    assert "pin_message" not in RedactingPlatform.__dict__
    assert "pin_message" not in PlatformMiddleware.__dict__
    inner = PinningRecording()
    await PinningRedaction(inner, Redactor()).pin_message(MESSAGE, f"pinned {SECRET}")
    [(name, (message, note))] = inner.calls
    assert name == "pin_message" and message == MESSAGE
    assert SECRET not in note and note.startswith("pinned ")


@pytest.mark.parametrize("local", LOCAL)
def test_local_answers_are_the_adapters_own(local):
    assert local in PlatformMiddleware.__dict__


class Failing(Recording):
    async def delete_message(self, message):
        raise RuntimeError("refused")


async def test_the_metrics_wrapper_counts_each_operation_by_outcome():
    metrics = GatewayMetrics()
    platform = metrics.wrap(Failing())
    await platform.send_message(HERE, "hello")
    with pytest.raises(RuntimeError):
        await platform.delete_message(MESSAGE)

    def count(op: str, outcome: str) -> float | None:
        labels = {"platform": "slack", "op": op, "outcome": outcome}
        return metrics.registry.get_sample_value("rawp_gateway_platform_ops_total", labels)

    assert count("send_message", "ok") == 1.0
    assert count("delete_message", "error") == 1.0
    assert count("send_message", "error") is None
    timed = {"platform": "slack", "op": "send_message"}
    assert metrics.registry.get_sample_value("rawp_gateway_platform_op_seconds_count", timed) == 1


def test_the_budget_wraps_what_a_platform_declares_and_names_unknown_overrides():
    from gateway.replicas.budgeted_platform import PlatformBudget
    from gateway.replicas.platform_budget import parse_limits

    budget = PlatformBudget(
        MemoryBuckets(), parse_limits("chat.postMessage=2/s,message.create=1/s")
    )
    console = ChatPlatform.__new__(Failing)
    console.rate_routes = None
    assert budget.wrap(console) is console  # nothing declared: not budgeted
    wrapped = budget.wrap(Recording())
    assert isinstance(wrapped, BudgetedPlatform) and wrapped.rate_routes is SLACK_ROUTES
    assert wrapped.routes["chat.postMessage"] == Limit(2.0, 2, per_channel=True)
    assert budget.unknown_overrides() == ["message.create"]  # a Discord route; Slack runs
