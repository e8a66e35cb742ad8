"""docs/architecture.md stays true: its skeletons fit the seams, its module paths exist.

The skeleton chat platform renders a real turn through `gateway.rendering.render.SessionRenderer`;
the skeleton agent kind answers a prompt whose events become real DPS frames (`make_frame`
validates every payload) and are rendered on the skeleton platform in turn.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from client.agents.base import AgentSpec, Reference
from docs.examples.agent_kind import EchoAgent, EchoSettings
from docs.examples.chat_platform import SkeletonPlatform
from gateway.platform import ChatPlatform, Choice, ConversationRef, MessageRef
from gateway.rendering.render import SessionRenderer
from rawp.fileref import FileToken
from rawp.frames import Frame, make_frame
from tests.gateway.support import Recorder, frame, settle

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
CONV = ConversationRef("skeleton", "chan", "thread")
USER_MESSAGE = MessageRef(CONV, "user-msg")
PROMPT_ID = "prompt-1"


def renderer_on(platform: ChatPlatform, sent: Recorder) -> SessionRenderer:
    renderer = SessionRenderer(platform, CONV, "sess-1", send_frame=sent)
    renderer.expect_prompt(PROMPT_ID, USER_MESSAGE, "alice")
    return renderer


def turn_start() -> Frame:
    return frame("session.turn.start", {"turn_id": "turn-1", "prompt_message_id": PROMPT_ID})


def turn_end() -> Frame:
    return frame("session.turn.end", {"turn_id": "turn-1", "stop_reason": "end_turn"})


def test_the_skeleton_platform_implements_every_abstract_method():
    assert not getattr(SkeletonPlatform, "__abstractmethods__", set())
    assert isinstance(SkeletonPlatform(), ChatPlatform)


async def test_the_skeleton_platform_renders_a_turn_with_an_approval():
    platform, sent = SkeletonPlatform(), Recorder()
    renderer = renderer_on(platform, sent)
    approval = {
        "interaction_id": "perm-1",
        "kind": "approval",
        "prompt": "Run the tests?",
        "options": [{"option_id": "allow", "label": "Allow", "kind": "allow_once"}],
    }
    request = frame("agent.interaction.request", approval)
    for f in (turn_start(), request):
        await renderer.feed(f)
    await settle()
    prompt_ref = next(
        MessageRef(CONV, mid) for mid, text in platform.messages.items() if "[Allow]" in text
    )
    assert platform.press(
        prompt_ref, request.payload.interaction_id, Choice("alice", option_id="allow")
    )
    response = await sent.next()
    assert response.type == "control.interaction.response"
    assert response.payload.option_id == "allow" and response.parent_id == request.message_id
    for f in (frame("agent.text.done", {"content_index": 0, "text": "All green."}), turn_end()):
        await renderer.feed(f)
    await settle()
    await renderer.close()
    again = Choice("alice", option_id="allow")  # answered and closed: nobody waits any more
    assert not platform.press(prompt_ref, request.payload.interaction_id, again)
    texts = list(platform.messages.values())
    assert "All green." in texts
    assert any(t.startswith("Run the tests?") and "Allow" in t.split("—")[-1] for t in texts)
    assert platform.reactions["user-msg"] == {"✅"}  # ⏳ on at the start, off at the end


async def test_the_skeleton_agent_answers_a_prompt_rendered_on_the_skeleton_platform(tmp_path):
    assert not getattr(EchoAgent, "__abstractmethods__", set())
    frames: list[Frame] = []

    async def emit(type: str, payload: dict) -> None:
        # As the client's session does: each event becomes a validated DPS frame of the turn.
        frames.append(make_frame(type, payload, session_id="sess-1", turn_id="turn-1"))

    spec = AgentSpec(name="echo", kind="echo", settings=EchoSettings())
    agent = EchoAgent(spec, workspace=tmp_path, session_id="sess-1", emit=emit, kill_grace=1.0)
    await agent.start()
    parts = ["fix the bug in ", FileToken("r1", "src/app.py")]
    prompt = agent.convert("m1", parts, [Reference("r1", "src/app.py", "src/app.py")], "text")
    assert prompt.text == "fix the bug in src/app.py" and prompt.files == ()
    assert await agent.prompt(prompt) == "end_turn"
    assert [f.type for f in frames] == ["agent.text.delta"] * 2 + ["agent.text.done"]

    platform = SkeletonPlatform()
    renderer = renderer_on(platform, Recorder())
    for f in (turn_start(), *frames, turn_end()):
        await renderer.feed(f)
    await settle()
    await renderer.close()
    assert list(platform.messages.values()) == ["fix the bug in src/app.py"]
    await agent.close()


async def test_a_cancelled_skeleton_turn_stops_with_cancelled(tmp_path):
    async def cancel_on_first(type: str, payload: dict) -> None:
        await agent.cancel()

    spec = AgentSpec(name="echo", kind="echo", settings=EchoSettings())
    agent = EchoAgent(
        spec, workspace=tmp_path, session_id="s", emit=cancel_on_first, kill_grace=1.0
    )
    assert await agent.prompt(agent.convert("m1", ["hello"], [], "text")) == "cancelled"


def test_the_doc_shows_both_skeletons_and_names_only_modules_that_exist():
    text = DOC.read_text()
    for example in ("docs/examples/chat_platform.py", "docs/examples/agent_kind.py"):
        assert example in text, f"architecture.md does not point at {example}"
    cited = set(re.findall(r"`((?:rawp|master|client|gateway|adapters)/[\w/]+\.py)`", text))
    assert len(cited) > 20, "the module table went missing"
    missing = sorted(p for p in cited if not (ROOT / p).is_file())
    assert not missing, f"architecture.md names modules that do not exist: {missing}"
    assert "docs/architecture.md" in (ROOT / "README.md").read_text()


def test_the_skeleton_kinds_settings_are_validated_once_with_a_one_line_error(monkeypatch):
    from client.agents import kinds

    monkeypatch.setitem(kinds.KIND_MODELS, "echo", EchoSettings)
    assert kinds.kind_settings("echo", {"pieces": 3}).pieces == 3
    with pytest.raises(ValueError) as refused:
        kinds.kind_settings("echo", {"pieces": 0})
    assert str(refused.value).startswith("pieces: ") and "1 or more" in str(refused.value)
    assert "\n" not in str(refused.value)
