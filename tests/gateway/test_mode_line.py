"""The "Mode: …" line (gateway.rendering.render_core `ModeLine`, issue 30 §1): the agent's
starting mode is not news, a change is, the mode asked for is shown even as the first one the
thread learns, and names are the chat's where it has one."""

from __future__ import annotations

from gateway.rendering.render_core import CHAT_MODES, ModeLine, chat_name
from rawp.events import Capabilities, ModeOption

OFFERED = [ModeOption(id="default", name="Default"), ModeOption(id="architect", name="Architect")]


def caps(current: str | None) -> Capabilities:
    return Capabilities(modes=OFFERED if current else None, current_mode=current)


def test_the_starting_mode_is_silent_and_each_change_is_a_line():
    line = ModeLine()
    assert line.seen(caps(None)) is None  # an agent without modes
    assert line.seen(caps("default")) is None  # where every Claude Code session starts
    assert line.seen(caps("default")) is None  # the same again (a greeting): nothing new
    assert line.seen(caps("plan")) == "Mode: plan"
    assert line.seen(caps("acceptEdits")) == "Mode: accept-edits"
    assert line.seen(caps("architect")) == "Mode: Architect"  # the agent's own name


def test_the_mode_asked_for_is_shown_even_as_the_first_the_thread_learns():
    line = ModeLine()
    line.wanted = CHAT_MODES["accept-edits"]
    assert line.seen(caps("default")) is None  # an ACP agent started for the change
    assert line.seen(caps("acceptEdits")) == "Mode: accept-edits"
    fresh = ModeLine()
    fresh.wanted = "plan"
    assert fresh.seen(caps("plan")) == "Mode: plan"


def test_a_revived_thread_does_not_show_the_mode_it_already_showed():
    line = ModeLine(shown="plan")  # from the store, after a gateway restart
    assert line.seen(caps("plan")) is None
    assert line.seen(caps("default")) == "Mode: ask"


def test_names():
    assert {chat_name(mode_id) for mode_id in CHAT_MODES.values()} == set(CHAT_MODES)
    assert chat_name("dontAsk") == "dontAsk"
