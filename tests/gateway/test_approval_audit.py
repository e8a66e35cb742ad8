"""Approval outcomes for the audit log (issue 15 §4), at the platform seam: a stranger's press
is refused and recorded, an approver's answer recorded with the tool it is about, the
gateway's own timeout denies and says so, the agent's timeout is left to the agent; and what a
record sends to the master (who as a subject, a short redacted preview, retries)."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from gateway.approvals.audit import (
    ANSWERED,
    EXPIRED,
    REFUSED,
    ApprovalRecord,
    EdgeAuditSink,
    actor_subject,
    preview,
)
from gateway.approvals.interactions import TIMED_OUT
from gateway.edge_client import EdgeClient
from gateway.platform import Choice, ConversationRef, MessageRef
from gateway.rendering.render import RenderOptions, SessionRenderer
from rawp.clock import FakeClock
from rawp.events import ToolInvokeRequest
from tests.gateway.support import ManualSleep, Recorder, RecordingPlatform, frame, settle
from tests.support import free_port

CONV = ConversationRef("recording", "chan", "thread")
TOOL = {"invocation_id": "b1", "tool_name": "Bash", "input": {"command": "rm -rf build"}}
APPROVAL = {
    "interaction_id": "perm-1",
    "kind": "approval",
    "prompt": "Run `rm -rf build`?",
    "invocation_id": "b1",
    "options": [
        {"option_id": "allow", "label": "Allow once", "kind": "allow_once"},
        {"option_id": "deny", "label": "Deny", "kind": "reject_once"},
    ],
}


class Audit:
    def __init__(self) -> None:
        self.records: list[ApprovalRecord] = []

    async def __call__(self, record: ApprovalRecord) -> None:
        self.records.append(record)


class Setup:
    def __init__(self, **options) -> None:
        self.platform = RecordingPlatform()
        self.clock = FakeClock()
        self.sent = Recorder()
        self.audit = Audit()
        self.renderer = SessionRenderer(
            self.platform,
            CONV,
            "sess-1",
            send_frame=self.sent,
            options=RenderOptions(**options),
            clock=self.clock,
            sleep=ManualSleep(self.clock),
            audit=self.audit,
        )
        self.renderer.expect_prompt("prompt-1", MessageRef(CONV, "user-msg"), "alice")

    async def ask(self, **changes) -> None:
        start = {"turn_id": "turn-1", "prompt_message_id": "prompt-1"}
        for f in (
            frame("session.turn.start", start),
            frame("tool.invoke.request", TOOL),
            frame("agent.interaction.request", {**APPROVAL, **changes}),
        ):
            await self.renderer.feed(f)
        await settle()


async def test_a_strangers_press_is_refused_and_recorded_an_approvers_answer_recorded():
    s = Setup(approver_ids=frozenset({"lead"}))
    await s.ask()
    s.platform.answer(Choice("mallory", option_id="allow"))
    s.platform.answer(Choice("lead", option_id="deny"))
    assert (await s.sent.next()).payload.option_id == "deny"
    await settle()
    refused, answered = s.audit.records
    assert refused.outcome == REFUSED and refused.actor_id == "mallory"
    assert (refused.option_id, refused.option_label) == ("allow", "Allow once")
    assert "Only the person who started this turn" in refused.detail
    assert answered.outcome == ANSWERED and answered.actor_id == "lead"
    assert (answered.option_id, answered.option_label) == ("deny", "Deny")
    for record in (refused, answered):
        assert record.tool == ToolInvokeRequest.model_validate(TOOL)
        assert (record.interaction_id, record.platform) == ("perm-1", "recording")


async def test_without_an_agent_timeout_the_gateway_denies_at_its_own_and_says_so():
    s = Setup(approval_timeout_s=600)
    await s.ask()
    assert s.platform.of("wait")[0][2] == 600  # the gateway's default, not "forever"
    s.clock.advance(600)
    s.platform.answer(None)  # the platform's wait ran out
    response = await s.sent.next()
    assert response.payload.option_id == "deny"
    await settle()
    assert s.platform.of("close")[-1][2] == "⏱ No answer in 10 min — denied."
    (expired,) = s.audit.records
    assert expired.outcome == EXPIRED and expired.actor_id is None
    assert expired.option_id == "deny" and "denied by the gateway" in expired.detail


async def test_a_short_configured_timeout_and_a_request_without_a_deny_option():
    s = Setup(approval_timeout_s=2.5)
    await s.ask(options=[{"option_id": "a", "label": "Red"}, {"option_id": "b", "label": "Blue"}])
    assert s.platform.of("wait")[0][2] == 2.5
    s.clock.advance(3)
    s.platform.answer(None)
    await settle()
    assert s.platform.of("close")[-1][2] == "⏱ No answer in 2.5 s — closed."
    assert s.sent.frames.empty()  # nothing says no for it: nothing is sent
    assert s.audit.records[0].outcome == EXPIRED and s.audit.records[0].option_id is None


async def test_the_agents_own_timeout_is_left_to_the_agent_and_recorded():
    s = Setup(approval_timeout_s=600)
    await s.ask(timeout_s=30)
    assert s.platform.of("wait")[0][2] == 30
    s.clock.advance(30)
    s.platform.answer(None)
    await settle()
    assert s.platform.of("close")[-1][2] == TIMED_OUT
    assert s.sent.frames.empty()
    (expired,) = s.audit.records
    assert expired.outcome == EXPIRED and "the agent's default" in expired.detail


def test_the_actor_is_named_as_the_master_names_users_and_the_preview_is_short_and_redacted():
    assert actor_subject("discord:1001", "42") == "discord:42"
    assert actor_subject("slack:T1:U2", "U9") == "slack:T1:U9"
    tool = ToolInvokeRequest(
        invocation_id="b1",
        tool_name="Bash",
        input={"command": "curl -H 'Authorization: sk-live-XYZ' " + "x" * 1000},
    )
    shown = preview(tool, lambda text: text.replace("sk-live-XYZ", "[redacted: token]"))
    assert shown.startswith('{"command":"curl -H \'Authorization: [redacted: token]\'')
    assert len(shown) == 200 and shown.endswith("…") and "sk-live" not in shown
    assert preview(None, str) is None
    assert preview(ToolInvokeRequest(invocation_id="t", tool_name="TodoWrite"), str) is None


@pytest.fixture
async def flaky_master():
    """A master that answers 503 to the first audit report, then 201: the wire only."""
    seen: list[dict] = []

    async def token(request: web.Request) -> web.Response:
        return web.json_response({"access_token": "t", "token_type": "Bearer", "expires_in": 900})

    async def audit(request: web.Request) -> web.Response:
        seen.append({"path": request.path, **await request.json()})
        if len(seen) == 1:
            return web.json_response({"error_code": "DOWN", "message": "down"}, status=503)
        return web.json_response(seen[-1], status=201)

    app = web.Application()
    app.router.add_post("/v1/edge/auth/token", token)
    app.router.add_post("/v1/edge/sessions/{id}/audit", audit)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


async def test_a_report_is_retried_with_the_same_record_id(flaky_master):
    url, seen = flaky_master
    edge = EdgeClient(url, "secret")
    try:
        sink = EdgeAuditSink(edge, "slack:T1:U2", "sess-9", retry_after_s=0.01)
        tool = ToolInvokeRequest(invocation_id="b1", tool_name="Bash", input={"command": "ls"})
        await asyncio.wait_for(
            sink(ApprovalRecord(ANSWERED, "perm-1", "slack", "U7", "allow", "Allow", tool)), 10
        )
    finally:
        await edge.close()
    first, second = seen
    assert first == second and first["path"] == "/v1/edge/sessions/sess-9/audit"
    assert first["actor"] == "slack:T1:U7" and first["tool_name"] == "Bash"
    assert first["input_preview"] == '{"command":"ls"}' and first["outcome"] == "answered"
