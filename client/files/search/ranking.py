"""Fuzzy ranking of a view with frizbee (SIMD Smith-Waterman) — runs in the search thread.

Rule 1: a file matches when the query is a subsequence of its `path`, ignoring case
        (frizbee with `max_typos=0`, `casing="ignore"`); `total_count` counts those files.
Rule 2: a file's score is its path score plus, when the query also matches its file name, its
        name score — so `auth` puts `src/auth.ts` above `a/u/t/h.py`, and an exact or prefix
        name match above scattered ones. Ties go to the shorter path.
Rule 3: only the best 200 path matches and the best 200 name matches are scored in Python.
        A file outside both pools scores at most the pool's last path score plus the pool's
        last name score, so the answer is exact whenever the last result reaches that; when it
        does not — queries of one to three letters, where tens of thousands of files tie —
        the best of the pools is returned (views list short paths first, so a tie's short
        paths are the ones pooled). On the benchmark's 62 queries at 100,000 files, 60 top-20
        lists equal the exact ranking and 2 (`lo`, `loc`) differ in their tail. Scoring every
        match in Python instead took half a second.
Rule 4: `match_score` is the score divided by the query's score against itself as both path
        and name, capped at 1.0. `match_ranges` (A-29) are code points into `path`, `end`
        exclusive, consecutive characters merged; frizbee reports UTF-8 byte offsets.
        When the name matches, the highlighted characters are those in the name.
Rule 5: a view's paths are matched in chunks of 131,072 (view.CHUNK), shortest paths first.
        When more than a sixteenth of the first chunk matches and there are more chunks, the
        query is too broad to be worth the rest: its path pool comes from the first chunk
        alone, the name pass still covers every file name, and `total_count` is left out
        (DPS §16.1.2 makes it optional; `truncated` is then true). At a million files that
        skips frizbee's scoring of up to 900,000 matches (50–150 ms) for the first letters
        of a query, and changes nothing for a view of one chunk, which every test uses.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from frizbee import Haystacks, Match, Matcher

from client.files.search.view import CHUNK, SearchView
from client.files.search.walk import Cancelled

POOL = 200  # Rule 3
# Large views are matched on several cores (frizbee's own threads): a third off the median
# at 100,000 paths on 2 cores. Small ones are not worth the thread start.
PARALLEL_FROM = 20_000
THREADS = min(4, os.cpu_count() or 1)
# Rule 5: past this many matches among the first chunk's paths, the other chunks are skipped.
BROAD_HITS = CHUNK // 16
_NAME_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rawp-file-names")
_CHUNKS = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="rawp-file-chunks")


@dataclass(frozen=True, slots=True)
class Ranked:
    position: int  # in the view
    score: float  # 0.0–1.0
    ranges: list[tuple[int, int]]


def matcher(query: str, max_items: int | None = None) -> Matcher:
    return Matcher(query, max_typos=0, casing="ignore", max_items=max_items)


def _code_points(text: str, byte_offsets: list[int]) -> list[int]:
    """UTF-8 byte offsets (any order, repeats allowed) → sorted code point offsets."""
    if text.isascii():
        return sorted(set(byte_offsets))
    starts: dict[int, int] = {}
    cursor = 0
    for index, char in enumerate(text):
        width = len(char.encode("utf-8"))
        for byte in range(cursor, cursor + width):
            starts[byte] = index
        cursor += width
    return sorted({starts[b] for b in byte_offsets if b in starts})


def merge_ranges(offsets: list[int]) -> list[tuple[int, int]]:
    """Sorted code point offsets → `(start, end)` runs, `end` exclusive."""
    ranges: list[tuple[int, int]] = []
    for offset in offsets:
        if ranges and ranges[-1][1] == offset:
            ranges[-1] = (ranges[-1][0], offset + 1)
        else:
            ranges.append((offset, offset + 1))
    return ranges


def subsequence(text: str, query: str) -> list[int] | None:
    """Code point offsets of `query` in `text` as a subsequence, ignoring case, in the shortest
    window that ends earliest (fzf's v1 highlighting); None when it is not a subsequence."""
    folded, wanted = [c.lower() for c in text], [c.lower() for c in query]
    if not wanted:
        return None
    at, end = 0, -1
    for i, char in enumerate(folded):
        if char == wanted[at]:
            at += 1
            if at == len(wanted):
                end = i
                break
    if end < 0:
        return None
    at, start = len(wanted) - 1, end
    for i in range(end, -1, -1):
        if folded[i] == wanted[at]:
            at -= 1
            if at < 0:
                start = i
                break
    offsets, at = [], 0
    for i in range(start, end + 1):
        if at < len(wanted) and folded[i] == wanted[at]:
            offsets.append(i)
            at += 1
    return offsets


def _offsets(m: Matcher, text: str, query: str) -> list[int] | None:
    """Where `query` matches `text`: frizbee's alignment when it covers the whole query.

    frizbee's Smith-Waterman alignment is local: across a long gap it may leave some query
    characters out (or report none), although `max_typos=0` guarantees they are all there.
    Then the subsequence is found directly, so every query character is highlighted (A-29)."""
    hit = m.match_one_indices(text, 0)
    offsets = _code_points(text, hit.indices) if hit is not None else []
    if len(offsets) == len(query):
        return offsets
    return subsequence(text, query) or offsets or None


def highlight(
    m: Matcher, query: str, path: str, name: str, name_matched: bool
) -> list[tuple[int, int]]:
    if name_matched:
        in_name = _offsets(m, name, query)
        if in_name:
            shift = len(path) - len(name)
            return merge_ranges([offset + shift for offset in in_name])
    return merge_ranges(_offsets(m, path, query) or [])


def rank(
    view: SearchView, query: str, limit: int, cancelled: Callable[[], bool]
) -> tuple[list[Ranked], int | None]:
    """The best `limit` files for `query` and how many files match in all (Rule 1) — None
    when the query is too broad to count in a large view (Rule 5)."""
    m = matcher(query)
    dead = view.dead
    pool = POOL + len(dead)
    # The name pass runs beside the path pass: frizbee drops the GIL on a `Haystacks`.
    names_job = _NAME_THREAD.submit(matcher(query, max_items=pool).match_list, view.names)
    try:
        path_pool, total = _match_paths(m, view, pool, cancelled)
    finally:
        name_hits = names_job.result()
    if total is not None:
        total -= sum(1 for i in dead if m.match_one(view.display(i), i) is not None)
        if total <= 0:
            return [], 0
    elif not path_pool and not name_hits:
        return [], 0
    if cancelled():
        raise Cancelled

    # Rule 3: only the two pools are scored in Python
    shown: dict[int, str] = {}  # the pooled positions' paths, made once (view.py Rule 4)
    scores = _score_pool(m, view, path_pool, name_hits[:pool], shown)
    order = sorted(scores, key=lambda p: (-sum(scores[p]), len(shown[p]), shown[p]))
    chosen = [(p, *scores[p]) for p in order[:limit]]
    own = m.match_one(query, 0)
    perfect = 2 * own.score if own is not None and own.score > 0 else 1
    return [_finish(view, m, query, perfect, shown[c[0]], *c) for c in chosen], total


def _match(m: Matcher, haystack: Haystacks) -> list[Match]:
    if len(haystack) >= PARALLEL_FROM and THREADS > 1:
        return m.match_list_parallel(haystack, THREADS)
    return m.match_list(haystack)


def _match_paths(
    m: Matcher, view: SearchView, pool: int, cancelled: Callable[[], bool]
) -> tuple[list[tuple[int, int]], int | None]:
    """The best `pool` path matches as (score, position), best first and ties in view order,
    and how many paths match; None for the count when only the first chunk was matched."""
    if not view.chunks:
        return [], 0
    first = _match(m, view.chunks[0])  # best score first, then view order
    if len(view.chunks) > 1 and len(first) > BROAD_HITS:
        return [(hit.score, hit.index) for hit in first[:pool]], None  # Rule 5
    if cancelled():
        raise Cancelled
    total = len(first)
    best = [(-hit.score, hit.index) for hit in first[:pool]]  # nsmallest: best first
    # The other chunks on the worker threads, one matcher each (a matcher is not shared).
    query, options = m.patterns[0].needle, {"max_typos": 0, "casing": "ignore"}
    others = _CHUNKS.map(lambda chunk: Matcher(query, **options).match_list(chunk), view.chunks[1:])
    for number, hits in enumerate(others, start=1):
        total += len(hits)
        base = number * CHUNK
        best.extend((-hit.score, base + hit.index) for hit in hits[:pool])
    return [(-score, p) for score, p in heapq.nsmallest(pool, best)], total


def _score_pool(
    m: Matcher,
    view: SearchView,
    path_pool: list[tuple[int, int]],
    name_pool: list[Match],
    shown: dict[int, str],
) -> dict[int, list[int]]:
    """Every pooled file's path score and name score (0: the name does not match), and
    into `shown` each pooled file's path."""
    scores: dict[int, list[int]] = {}  # position → [path score, name score]
    alive = view.alive
    for score, position in path_pool:
        if alive(position):
            scores.setdefault(position, [-1, -1])[0] = score
    room = POOL
    for hit in name_pool:  # hits are distinct names; each stands for the files holding it
        for position in view.holders(hit.index):
            if alive(position):
                scores.setdefault(position, [-1, -1])[1] = hit.score
                room -= 1
                if room == 0:
                    break
        if room == 0:
            break
    for position, pair in scores.items():
        shown[position] = view.display(position)
        if pair[0] < 0:
            found = m.match_one(shown[position], position)
            pair[0] = found.score if found is not None else 0
        if pair[1] < 0:
            found = m.match_one(view.name(position), position)
            pair[1] = found.score if found is not None else 0
    return scores


def _finish(
    view: SearchView,
    m: Matcher,
    query: str,
    perfect: int,
    path: str,
    position: int,
    path_score: int,
    name_score: int,
) -> Ranked:
    return Ranked(
        position,
        min(1.0, (path_score + name_score) / perfect),
        highlight(m, query, path, view.name(position), name_score > 0),
    )
