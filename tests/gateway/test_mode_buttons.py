"""The mode buttons' one home (gateway.sessions.mode_buttons, issue 30 §1): which chat modes an
agent offers and which is current; one message per session, edited only when what it shows
changes, found again (not posted again) by a renderer started afresh on the same store."""

from __future__ import annotations

import pytest

from gateway.platform import ConversationRef, ModeRow
from gateway.rendering.render import SessionRenderer
from gateway.sessions.mode_buttons import offered_row
from gateway.storage.conversation_store import ConversationStore
from rawp.events import Capabilities, ModeOption
from tests.gateway.support import RecordingPlatform, frame

THREAD = ConversationRef("recording", "chan", "thread")
CLAUDE = [
    ModeOption(id="default", name="Default"),
    ModeOption(id="acceptEdits", name="Accept Edits"),
    ModeOption(id="plan", name="Plan Mode"),
    ModeOption(id="bypassPermissions", name="Bypass"),
]


class ButtonPlatform(RecordingPlatform):
    async def show_modes(self, conversation, text, row, key, message=None):
        if message is not None:
            self._record("modes-edit", message.message_id, row, text)
            return message
        ref = self._ref(conversation)
        self._record("modes", ref.message_id, row, key)
        return ref


def caps(current: str | None, modes=CLAUDE) -> dict:
    return Capabilities(modes=modes, current_mode=current).model_dump(mode="json")


@pytest.fixture
async def store(tmp_path):
    opened = await ConversationStore.open(tmp_path / "c.sqlite3")
    try:
        yield opened
    finally:
        await opened.close()


def test_the_chat_modes_an_agent_offers_by_id_or_name():
    assert offered_row(Capabilities(modes=CLAUDE, current_mode="default")) == ModeRow(
        ("plan", "ask", "accept-edits"), "ask"
    )
    acp = [ModeOption(id="m1", name="Plan"), ModeOption(id="m2", name="Accept edits")]
    assert offered_row(Capabilities(modes=acp, current_mode="m2")) == ModeRow(
        ("plan", "accept-edits"), "accept-edits"
    )
    other = [ModeOption(id="architect", name="Architect")]
    assert offered_row(Capabilities(modes=other, current_mode="architect")) is None
    assert offered_row(Capabilities(modes=None)) is None
    assert offered_row(Capabilities(modes=CLAUDE, current_mode="bypassPermissions")).current is None


async def test_one_message_edited_on_change_and_found_again_after_a_restart(store):
    platform = ButtonPlatform()

    async def renderer() -> SessionRenderer:
        async def send_frame(_frame):
            return None

        return SessionRenderer(platform, THREAD, "s-1", send_frame=send_frame, store=store)

    first = await renderer()
    await first.feed(frame("session.capabilities", caps("default")))
    await first.feed(frame("session.capabilities", caps("default")))  # nothing new: no call
    await first.feed(frame("session.capabilities", caps("plan")))
    posted, edits = platform.of("modes"), platform.of("modes-edit")
    assert [c[2] for c in posted] == [ModeRow(("plan", "ask", "accept-edits"), "ask")]
    assert [c[2].current for c in edits] == ["plan"]
    assert "`plan`" in edits[0][3]
    await first.close()

    again = await renderer()  # a restarted gateway, the same store
    await again.feed(frame("session.capabilities", caps("plan")))
    assert len(platform.of("modes")) == 1  # not posted again
    assert platform.of("modes-edit")[-1][1] == posted[0][1]  # the same message, brought up to date
    shown = len(platform.of("modes")) + len(platform.of("modes-edit"))
    await again.feed(frame("session.capabilities", caps(None, modes=[])))
    assert len(platform.of("modes")) + len(platform.of("modes-edit")) == shown  # none offered
    await again.close()


async def test_a_platform_without_buttons_is_not_asked_again(store):
    platform = RecordingPlatform()  # `show_modes` is the default: no buttons

    async def send_frame(_frame):
        return None

    renderer = SessionRenderer(platform, THREAD, "s-1", send_frame=send_frame, store=store)
    await renderer.feed(frame("session.capabilities", caps("default")))
    await renderer.feed(frame("session.capabilities", caps("plan")))
    assert await store.recorded("s-1", "mode-buttons") == "-"  # recorded as a hidden post
    await renderer.close()
