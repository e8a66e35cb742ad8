"""`match_ranges` (A-29): code points into `path`, `end` exclusive, consecutive characters merged.

frizbee with max_typos=0 is a subsequence matcher: a file matches when the query's characters
appear in order in its path (case ignored). So the highlighted characters, read in order,
spell the query — checked here for frizbee's own answers and through the whole service.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from client.files.search import FileSearchService
from client.files.search.ranking import highlight, matcher, merge_ranges
from tests.client.test_files_helpers import make_tree, search

# Letters with and without case, multi-byte UTF-8 (2, 3 and 4 bytes) and path punctuation.
ALPHABET = "abcXYZ019_-./ éñÄ日本😀"
path_text = st.text(alphabet=ALPHABET, min_size=1, max_size=40).filter(lambda p: p.strip("/"))


def check_ranges(path: str, query: str, ranges: list[tuple[int, int]]) -> None:
    assert ranges, "a match highlights something"
    previous_end = -1
    for start, end in ranges:
        assert 0 <= start < end <= len(path)
        assert start > previous_end, "ranges are sorted, disjoint and never adjacent (merged)"
        previous_end = end
    spelled = "".join(path[start:end] for start, end in ranges)
    assert spelled.lower() == query.lower()


@settings(max_examples=300, deadline=None)
@given(path=path_text, data=st.data())
def test_highlighted_characters_spell_the_query(path, data):
    picks = data.draw(st.lists(st.integers(0, len(path) - 1), min_size=1, max_size=6, unique=True))
    query = "".join(path[i] for i in sorted(picks))
    if data.draw(st.booleans()):
        query = "".join(c.swapcase() if c.isascii() else c for c in query)
    name = path.rpartition("/")[2]
    m = matcher(query)
    if query.isascii():
        assert m.match_one(path, 0) is not None, "an ASCII subsequence always matches"
    name_matched = bool(name) and m.match_one(name, 0) is not None
    if m.match_one(path, 0) is None:
        return
    check_ranges(path, query, highlight(m, query, path, name, name_matched))


@given(st.lists(st.integers(0, 30), unique=True).map(sorted))
def test_merge_ranges_covers_exactly_the_offsets(offsets):
    ranges = merge_ranges(offsets)
    covered = [i for start, end in ranges for i in range(start, end)]
    assert covered == offsets
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    base = tmp_path_factory.mktemp("ranges")
    make_tree(
        base,
        [
            "src/auth.ts",
            "src/authority/AuthService.py",
            "docs/café/añb.md",
            "日本/設定.toml",
            "a/u/t/h.py",
            "tests/test_auth_flow.py",
            "README.md",
            "x😀y/emoji_file.txt",
        ],
    )
    return base


@pytest.fixture(scope="module")
def search_tree(tree):
    """One service (one index, one event loop) for every example: the range rules are about
    ranking, and building the index again per example (a walk child each time) took a minute
    of the suite's time."""
    with asyncio.Runner() as runner:
        service = FileSearchService([tree], watch=False)
        try:
            yield lambda query: runner.run(search(service, tree, query, max_results=50))
        finally:
            runner.run(service.close())


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(alphabet="autsrcéñ設定😀./_ ", min_size=1, max_size=6))
def test_every_candidate_satisfies_the_range_rules(search_tree, query):
    result = search_tree(query)
    stripped = query.strip()
    for candidate in result.candidates:
        ranges = [(r.start, r.end) for r in candidate.match_ranges or []]
        if stripped:
            check_ranges(candidate.path, stripped, ranges)
            assert 0.0 < candidate.match_score <= 1.0
    assert result.total_count == len(result.candidates)  # fewer than 50 files: nothing cut
    assert result.truncated is False
