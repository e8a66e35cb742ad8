"""Markdown → Slack mrkdwn blocks: nothing lost, escaped everywhere, blocks within 3,000."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.slack.mrkdwn import MAX_BLOCKS, ZWSP, block_texts, messages_of, to_mrkdwn, unescape
from gateway.rendering.chunker import fence_after

# Text with Slack's special characters but no markdown styling (that is converted on purpose).
plain = st.text(alphabet="ab c<>&\n.,:;!?éü日", max_size=400)
code_line = st.text(alphabet="xy =<>&`*_~[]()#-+", max_size=60).filter(
    lambda line: not re.match(r"^ {0,3}(`{3,}|~{3,})", line)
)


@given(plain)
def test_plain_text_survives_escaping(text):
    assert unescape(to_mrkdwn(text)) == text
    assert not re.search(r"[<>]", to_mrkdwn(text))


@given(st.lists(code_line, max_size=12), st.sampled_from(["", "python", "diff"]))
def test_code_keeps_every_character_and_loses_only_its_language(lines, language):
    code = "\n".join(lines)
    converted = to_mrkdwn(f"```{language}\n{code}\n```")
    assert converted.startswith("```\n") and converted.endswith("\n```")
    body = converted[4:-4]
    assert "```" not in body  # a triple inside cannot close Slack's block early
    assert unescape(body.replace(ZWSP, "")) == code


def test_styling_becomes_mrkdwn_outside_code_only():
    markdown = "# Title\n**bold** *it* ~~gone~~ [docs](https://x.org/?a=1&b=2) `**raw**`"
    assert to_mrkdwn(markdown) == (
        "*Title*\n*bold* _it_ ~gone~ <https://x.org/?a=1&amp;b=2|docs> `**raw**`"
    )


paragraphs = st.lists(
    st.one_of(
        plain.map(lambda t: t.replace("\n", " ")),
        st.lists(code_line, min_size=1, max_size=40).map(
            lambda ls: "```py\n" + "\n".join(ls) + "\n```"
        ),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(paragraphs, st.sampled_from([500, 800, 3000]))
def test_blocks_fit_balance_their_fences_and_lose_nothing(parts, limit):
    markdown = "\n\n".join(parts)
    blocks = block_texts(markdown, limit)
    assert all(len(b) <= limit for b in blocks)
    assert all(fence_after(None, b) is None for b in blocks)

    def content(text: str) -> str:
        kept = [line for line in text.split("\n") if not re.match(r"^ {0,3}```", line)]
        return re.sub(r"\s", "", "".join(kept))

    assert content(unescape("\n".join(blocks)).replace(ZWSP, "")) == content(markdown)


def test_a_limit_below_the_chunkers_minimum_is_refused():
    import pytest

    from gateway.rendering.chunker import MIN_LIMIT

    with pytest.raises(ValueError, match="minimum"):
        block_texts("x", MIN_LIMIT - 1)


def test_escaping_does_not_shatter_a_long_answer_into_tiny_blocks():
    # 100 KB that escaping grows (issue 7 §5): blocks are as full as the limit allows, not
    # hundreds of small ones (the old re-split checked pieces against its smaller size).
    line = "if a < b && c > d: keep <tags> & entities"
    prose = "\n".join([line] * 40)
    code = "```py\n" + "\n".join([line] * 60) + "\n```"
    markdown = "\n\n".join([prose, code] * 30)[:100_000]
    blocks = block_texts(markdown)
    assert all(len(b) <= 3000 for b in blocks)
    assert all(fence_after(None, b) is None for b in blocks)
    escaped = len(to_mrkdwn(markdown))
    assert len(blocks) <= escaped // 3000 * 1.25 + 2, (len(blocks), escaped)


def test_a_message_never_holds_more_than_50_blocks():
    # 40,000 characters (the renderer's Slack limit) that escaping grows fivefold.
    markdown = "\n".join("&" * 99 for _ in range(400))
    messages = messages_of(markdown)
    assert len(messages) >= 2 and all(len(m) <= MAX_BLOCKS for m in messages)
    texts = [b["text"]["text"] for m in messages for b in m]
    assert unescape("".join(texts)).replace("\n", "") == markdown.replace("\n", "")


def test_slack_message_text_becomes_what_the_user_typed():
    from adapters.slack.mrkdwn import from_slack_text

    sent = (
        "a &lt;b&gt; &amp; <@U1> <@U2|bob> <#C1|rawp> <!here> <https://x.org> <https://y.org|docs>"
    )
    assert (
        from_slack_text(sent) == "a <b> & @U1 @bob #rawp @here https://x.org docs (https://y.org)"
    )
    assert from_slack_text("<mailto:a@b.org|a@b.org>") == "a@b.org"


@given(plain)
def test_what_slack_escapes_comes_back_unchanged(text):
    from adapters.slack.mrkdwn import escape, from_slack_text

    assert from_slack_text(escape(text)) == text
