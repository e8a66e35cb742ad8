"""The chunker: every chunk within the limit, fences balanced per chunk, nothing lost (A-35)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.rendering.chunker import MIN_LIMIT, chunk_markdown, split_markdown

# An independent reading of CommonMark fences, written apart from gateway.rendering.chunker on
# purpose: if the chunker's own scanner were wrong in the same way, its tests could not see it.
OPENER = re.compile(r"^ {0,3}(?P<run>`{3,16}(?!`)|~{3,16}(?!~))(?P<info>.*)$")
CLOSER = re.compile(r" {0,3}(?P<run>`+|~+)[ \t]*")


def open_fence_at_end(text: str) -> str | None:
    """The fence run still open after `text`, or None."""
    open_run = None
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if open_run is None:
            m = OPENER.match(line)
            if m and not (m["run"][0] == "`" and "`" in m["info"]):
                open_run = m["run"]
        else:
            m = CLOSER.fullmatch(line)
            if m and m["run"][0] == open_run[0] and len(open_run) <= len(m["run"]) <= 16:
                open_run = None
    return open_run


def check(text: str, limit: int) -> list:
    chunks = chunk_markdown(text, limit)
    assert "".join(c.body for c in chunks) == text  # nothing lost, nothing reordered
    for chunk in chunks:
        assert len(chunk.text) <= limit, (len(chunk.text), chunk)
        assert chunk.body, "no empty messages"
        assert open_fence_at_end(chunk.text) is None, f"unbalanced chunk: {chunk.text!r}"
        # What the chunker adds is only fences: a reopening fence line and a closing fence.
        assert chunk.prefix == "" or re.fullmatch(r"(`{3,16}|~{3,16})[^\s`]*\n", chunk.prefix)
        assert chunk.suffix == "" or re.fullmatch(r"\n?(`{3,16}|~{3,16})", chunk.suffix)
    return chunks


# --- generators -------------------------------------------------------------------------------

WORDS = st.sampled_from(
    [
        "word",
        "the",
        "résumé",
        "naïve",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
        "😀",
        "👩‍💻",
        "漢字",
        "`inline`",
        "x`y",
        "||",
        "|",
    ]
)
LANGS = st.sampled_from(["", "python", "py", "diff", "js", "rust", "sh", "c++", "text"])


@st.composite
def prose_line(draw) -> str:
    words = draw(st.lists(WORDS, max_size=40))
    return " ".join(words)


@st.composite
def long_line(draw) -> str:
    unit = draw(st.sampled_from(["a", "𝕏", "😀", "ab ", "` ", "```", "~", " "]))
    return unit * draw(st.integers(min_value=50, max_value=900))


@st.composite
def code_block(draw) -> str:
    run = draw(st.sampled_from(["```", "````", "~~~", "~~~~"]))
    lang = draw(LANGS)
    body_lines = draw(
        st.lists(
            st.one_of(
                prose_line(),
                long_line(),
                st.sampled_from(["", "``` not a closer", "``", "    ```", "~~~~~~~~", "`x`"]),
            ),
            max_size=25,
        )
    )
    closed = draw(st.booleans())
    parts = [run + lang, *body_lines]
    if closed:
        parts.append(run)
    return "\n".join(parts)


@st.composite
def markdown(draw) -> str:
    blocks = draw(
        st.lists(
            st.one_of(prose_line(), long_line(), code_block(), st.just(""), st.text(max_size=60)),
            max_size=20,
        )
    )
    sep = draw(st.sampled_from(["\n", "\n\n", "\r\n"]))
    return sep.join(blocks)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=markdown(), limit=st.integers(min_value=MIN_LIMIT, max_value=400))
def test_random_markdown_splits_within_limit_balanced_and_lossless(text, limit):
    check(text, limit)


@settings(max_examples=200, deadline=None)
@given(text=st.text(), limit=st.integers(min_value=MIN_LIMIT, max_value=300))
def test_any_text_at_all_is_lossless(text, limit):
    check(text, limit)


# --- examples that pin down the preferences ---------------------------------------------------


def test_short_text_is_one_message_unchanged():
    assert split_markdown("hello\n\nworld", 2000) == ["hello\n\nworld"]


def test_empty_text_is_no_message():
    assert chunk_markdown("", 2000) == []


def test_prefers_paragraph_boundaries():
    para = "word " * 30  # 150 code points
    text = f"{para}\n\n{para}\n\n{para}"
    chunks = check(text, 400)
    assert chunks[0].body.endswith("\n\n")
    assert chunks[0].body == f"{para}\n\n{para}\n\n"


def test_falls_back_to_line_boundaries():
    line = "x" * 90
    text = "\n".join([line] * 5)
    chunks = check(text, 200)
    assert all(c.body.endswith("\n") for c in chunks[:-1])


def test_code_block_longer_than_a_message_is_closed_and_reopened_with_its_language():
    code = "\n".join(f"print({i})" for i in range(60))
    text = f"Here:\n\n```python\n{code}\n```\nDone."
    chunks = check(text, 150)
    assert len(chunks) > 2
    inside = [c for c in chunks if c.prefix]
    assert inside and all(c.prefix == "```python\n" for c in inside)
    assert chunks[1].text.startswith("```python\n")
    assert all(c.text.endswith("```") for c in chunks[:-1] if c.suffix)


def test_tilde_and_long_fences_reopen_with_the_same_run():
    text = "~~~~sh\n" + "\n".join(["echo ```"] * 40) + "\n~~~~\n"
    chunks = check(text, 120)
    assert all(c.prefix in ("", "~~~~sh\n") for c in chunks)
    assert any(c.suffix.endswith("~~~~") for c in chunks)


def test_one_over_long_line_is_cut_at_the_limit_counting_code_points():
    text = "😀" * 5000  # astral-plane: one code point each, two UTF-16 units
    chunks = check(text, 2000)
    assert all(len(c.text) <= 2000 for c in chunks)
    assert len(chunks) == 3


def test_long_line_cut_prefers_a_space():
    text = ("abcdefghij " * 40).strip()
    chunks = check(text, 200)
    assert chunks[0].body.endswith(" ")


def test_continuation_never_starts_with_a_fence():
    text = "y" * 150 + "```python" + "z" * 50
    for chunk in check(text, 160)[1:]:
        assert not chunk.body.lstrip(" ").startswith("```")


def test_a_cut_inside_a_line_never_splits_a_character_reference():
    # Slack's blocks are chunked after escaping (adapters.slack.mrkdwn): `&am|p;` would show.
    text = "&lt;&amp;&gt;" * 400
    for limit in (2000, 3000, 777):
        for chunk in check(text, limit):
            assert re.fullmatch(r"(&(amp|lt|gt);)+", chunk.body), chunk.body[-8:]


def test_blank_lines_with_spaces_and_crlf_end_paragraphs():
    para = "word " * 30
    for blank in ("", "   ", "\t", "\r"):
        text = f"{para}\n{blank}\n{para}\n{blank}\n{para}"
        assert check(text, 400)[0].body == f"{para}\n{blank}\n{para}\n{blank}\n"


def test_backticks_in_info_string_are_not_a_fence():
    text = "``` a`b\n" + "text\n" * 50
    chunks = check(text, 100)
    assert all(c.prefix == "" and c.suffix == "" for c in chunks)


def test_limit_below_minimum_is_refused():
    with pytest.raises(ValueError, match="minimum"):
        chunk_markdown("x", MIN_LIMIT - 1)
