"""A view matched in several chunks (ranking.py Rule 5), with the chunk made small so a tree of
a few dozen files spans several: exact counts and positions across chunks, and the cut for a
query too broad to count."""

from __future__ import annotations

import pytest

from client.files.search import FileSearchService, ranking, view
from tests.client.test_files_helpers import make_tree, search

SHORT = [f"m/f{i:02}.py" for i in range(30)]  # the shortest paths: the first chunks
LONG = "deep/down/below/every/other/one/needle_target.rs"  # the longest: the last chunk


@pytest.fixture
async def service(tmp_path, monkeypatch):
    monkeypatch.setattr(view, "CHUNK", 8)
    monkeypatch.setattr(ranking, "CHUNK", 8)
    monkeypatch.setattr(ranking, "BROAD_HITS", 2)
    make_tree(tmp_path, [*SHORT, LONG, "deep/needle.txt"])
    service = FileSearchService([tmp_path], watch=False)
    yield service
    await service.close()


async def test_a_selective_query_is_matched_and_counted_across_every_chunk(service, tmp_path):
    result = await search(service, tmp_path, "needle")
    assert [c.path for c in result.candidates] == ["deep/needle.txt", LONG]
    assert result.total_count == 2
    assert result.truncated is False
    [highlight] = result.candidates[1].match_ranges
    assert LONG[highlight.start : highlight.end] == "needle"


async def test_a_broad_query_is_ranked_from_the_first_chunk_and_not_counted(service, tmp_path):
    result = await search(service, tmp_path, "py", max_results=5)
    assert result.total_count is None
    assert result.truncated is True
    assert len(result.candidates) == 5
    assert all(c.path in SHORT for c in result.candidates)
