"""How a requested mode finds one an agent offers (client.agents.modes): by id, then by
name with case, spaces and punctuation ignored; anything else is refused with the list."""

from __future__ import annotations

import pytest

from client.agents.modes import CLAUDE_MODES, ModeRefused, Modes
from rawp.events import ModeOption

ACP_LIKE = Modes(
    (
        ModeOption(id="ask", name="Ask"),
        ModeOption(id="code", name="Accept Edits"),
        ModeOption(id="architect", name="Plan"),
    ),
    "ask",
)


def test_an_id_is_taken_as_it_is():
    assert Modes(CLAUDE_MODES, "default").resolve("acceptEdits") == "acceptEdits"
    assert ACP_LIKE.resolve("code") == "code"


def test_the_claude_ids_edges_send_find_an_acp_mode_by_its_name():
    assert ACP_LIKE.resolve("acceptEdits") == "code"
    assert ACP_LIKE.resolve("plan") == "architect"
    assert ACP_LIKE.resolve("ACCEPT-edits") == "code"


def test_an_unknown_mode_is_refused_naming_the_offered_ones():
    with pytest.raises(ModeRefused) as refused:
        ACP_LIKE.resolve("yolo")
    assert refused.value.code == "INVALID_MODE"
    assert refused.value.message == "unknown mode 'yolo'; this agent offers ask, code, architect"
    with pytest.raises(ModeRefused):
        ACP_LIKE.resolve("")
