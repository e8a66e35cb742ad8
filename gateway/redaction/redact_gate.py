"""Which redaction rules can match a text, found in one pass (gateway.redaction.redact rule 2).

Running some forty patterns one by one over a 100 KB answer costs milliseconds — more than the
render budget (≤ 5 ms, docs/benchmarks.md). Hyperscan scans for all of them at once in a
fraction of one: compiled in prefilter mode it may report a rule that then does not match, but
never misses one, and each rule is reported once. Only the rules it names run their exact
Python pattern, so what is redacted is decided by `re` alone.

The scan sees each character as one byte, every non-ASCII one as `?`; the rules are
compiled with `re.ASCII`, so no character class means more to `re` than to Hyperscan and
nothing `re` would find is missed.

Without the `hyperscan` package (a platform with no wheel) every rule runs: the same result,
slower. The database is compiled once per process (about a second): the gateway does it at
start (`gateway.redaction.redact.prepare`, in a thread), else the first redaction does. A scan uses
its scratch space from the event loop's thread only.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Sequence

log = logging.getLogger(__name__)

try:
    import hyperscan
except ImportError:  # pragma: no cover - exercised only where no wheel exists
    hyperscan = None


class Gate:
    def __init__(self, patterns: Sequence[re.Pattern[str]]) -> None:
        self._count = len(patterns)
        self._db = None
        if hyperscan is None:
            log.warning("hyperscan is not installed: every redaction rule runs on every text")
            return
        db = hyperscan.Database()
        flags = []
        for pattern in patterns:
            flag = hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_PREFILTER
            flag |= hyperscan.HS_FLAG_ALLOWEMPTY
            if pattern.flags & re.IGNORECASE:
                flag |= hyperscan.HS_FLAG_CASELESS
            if pattern.flags & re.DOTALL:
                flag |= hyperscan.HS_FLAG_DOTALL
            if pattern.flags & re.MULTILINE:
                flag |= hyperscan.HS_FLAG_MULTILINE
            flags.append(flag)
        db.compile(
            expressions=[p.pattern.encode() for p in patterns],
            ids=list(range(len(patterns))),
            elements=len(patterns),
            flags=flags,
        )
        self._db = db

    def candidates(self, text: str) -> Sequence[int]:
        """The indexes of the patterns that may match `text`, in order."""
        if self._db is None:
            return range(self._count)
        hits: set[int] = set()

        def on_match(index: int, start: int, end: int, flags: int, context: object) -> None:
            hits.add(index)

        # One byte per character (anything not ASCII becomes `?`), so offsets and counted
        # repeats mean what they mean to `re`; the patterns are ASCII-only
        # (gateway.redaction.redact).
        self._db.scan(text.encode("ascii", "replace"), match_event_handler=on_match)
        return sorted(hits)


# `.env` candidates (rawp.fingerprints rule 3) of the lengths a session's fingerprints name:
# a token is one separator, exactly `length` bytes of no separator, one separator. Runs end at
# whitespace (the stops are made spaces first), pieces also at `:@/?&#=`, and a value after
# any `=` runs to whitespace — three families of patterns, each reporting where a match ends.
_SPACE = rb"[ \t\n\r\f\v]"
_RUN = rb"[^ \t\n\r\f\v]"
_PIECE_SEP = rb"[ \t\n\r\f\v:@/?&#=]"
_PIECE = rb"[^ \t\n\r\f\v:@/?&#=]"


@functools.lru_cache(maxsize=64)
def _length_db(lengths: frozenset[int]):
    expressions = []
    for length in sorted(lengths):
        expressions += [
            _SPACE + _RUN + b"{%d}" % length + _SPACE,
            _PIECE_SEP + _PIECE + b"{%d}" % length + _PIECE_SEP,
            b"=" + _RUN + b"{%d}" % length + _SPACE,
        ]
    db = hyperscan.Database()
    db.compile(
        expressions=expressions,
        ids=[sorted(lengths)[i // 3] for i in range(len(expressions))],
        elements=len(expressions),
        flags=[0] * len(expressions),
    )
    return db


def tokens_of_lengths(padded: bytes, lengths: frozenset[int]) -> set[bytes] | None:
    """The tokens of `padded` (stops already made spaces, a space at each end) whose length
    is one of `lengths`; None without Hyperscan (the caller tokenizes in Python)."""
    if hyperscan is None or not lengths:
        return None
    found: set[bytes] = set()

    def on_match(length: int, start: int, end: int, flags: int, context: object) -> None:
        found.add(padded[end - length - 1 : end - 1])

    _length_db(lengths).scan(padded, match_event_handler=on_match)
    return found
