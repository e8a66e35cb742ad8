"""The web edge's inline markdown (markdown.js `inline`) against CommonMark's flanking rules,
run in Chromium on generated text (issue 28 §2: `__` paired across words)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

RENDER = """async (text) => {
  const { inline } = await import('/static/markdown.js');
  const box = document.createElement('div');
  box.append(...inline(text));
  return { html: box.innerHTML, text: box.textContent,
           marked: box.querySelectorAll('strong, em, code').length };
}"""
FAST = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
WORDS = st.text(alphabet="abcxyz=1.()", min_size=1, max_size=6)


@pytest.fixture
def md_page(page, spa_server):
    page.goto(spa_server.url + "/")
    page.wait_for_function("() => document.readyState === 'complete'")
    return page


def render(page, text):
    return page.evaluate(RENDER, text)


def test_examples(md_page):
    cases = {
        "a __x=1 and b __y=2": "a __x=1 and b __y=2",
        "snake_case_name": "snake_case_name",
        "**bold** and __strong__": "<strong>bold</strong> and <strong>strong</strong>",
        "_em_ and *em*": "<em>em</em> and <em>em</em>",
        "Hello **wor": "Hello **wor",
        "x * y * z": "x * y * z",
    }
    for source, html in cases.items():
        assert render(md_page, source)["html"] == html, source


@FAST
@given(st.lists(st.tuples(WORDS, st.sampled_from(["__", "_", "**", "*"])), min_size=1))
def test_a_marker_after_a_space_before_a_word_never_closes(md_page, parts):
    # Every marker here stands after a space and before a word: it may open, never close
    # (a closer needs a non-space before it), so nothing is styled and every character stays.
    text = "".join(f" {marker}{word}" for word, marker in parts)
    shown = render(md_page, text)
    assert shown["marked"] == 0
    assert shown["text"] == text


@FAST
@given(st.text(alphabet="ab _*`\n", max_size=30))
def test_only_markers_are_ever_dropped(md_page, text):
    # Whatever the input, the shown text is the input with some markers taken out, in order.
    shown = render(md_page, text)["text"]
    rest = iter(text)
    for char in shown:
        for skipped in rest:
            if skipped == char:
                break
            assert skipped in "_*`", (text, shown)
        else:
            raise AssertionError(f"{shown!r} is not {text!r} less some markers")
