"""Spoilers: `||` inside is neutralised, every message within the limit, nothing lost."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.rendering.chunker import ZWSP, neutralise_spoilers, spoiler_messages


def test_pipes_are_neutralised_without_changing_what_is_read():
    assert neutralise_spoilers("a || b ||| c |") == f"a |{ZWSP}| b |{ZWSP}|{ZWSP}| c |"


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(["|", "a", " ", "\n", "😀"]), max_size=3000),
    limit=st.integers(min_value=150, max_value=2000),
)
def test_spoilers_stay_closed_and_lose_nothing(text, limit):
    messages = spoiler_messages("💭 Thinking", text, limit)
    recovered = []
    for i, message in enumerate(messages):
        assert len(message) <= limit
        if i == 0 and text:
            assert message.startswith("💭 Thinking ||")
            message = message[len("💭 Thinking ") :]
        assert message.startswith("||") and message.endswith("||")
        inner = message[2:-2]
        assert "||" not in inner  # nothing inside can end the spoiler early
        assert not inner.startswith("|") and not inner.endswith("|")
        recovered.append(inner)
    # Remove the zero-width spaces that were added and the text is back, in order.
    assert "".join(recovered).replace(ZWSP, "") == text


def test_code_in_thinking_is_chunked_with_balanced_fences():
    text = "```py\n" + "x = 1 || 2\n" * 400 + "```\n"
    messages = spoiler_messages("💭", text, 500)
    assert len(messages) > 1
    assert all(m.count("```") % 2 == 0 for m in messages)
