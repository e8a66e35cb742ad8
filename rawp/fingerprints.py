"""Fingerprints of secret values: how an edge redacts a workspace's `.env` values it never sees.

The `.env` file is on the client's machine; the text that reaches a chat is rendered by the
gateway. The client sends, in `session.capabilities` (`secret_fingerprints`), a keyed hash of
each value and the set of value lengths; the gateway hashes the candidate tokens of outgoing
text of those lengths and redacts a token whose hash is one of them (issue 15 §3). Rules:

1. Only values of at least `MIN_LENGTH` characters are fingerprinted: shorter ones (`true`,
   `8080`, `dev`) are configuration, not secrets, and would redact ordinary words.
2. The hash is BLAKE2b keyed with a random per-session salt, cut to 96 bits: fast enough to
   test every candidate of 100 KB within the render budget, salted so one session's
   fingerprints say nothing about another's. Whoever holds salt and hashes (the master and
   its edges, which already relay everything the agent prints) can test guesses of a value;
   chat users never see them.
3. Candidates of a text are its runs of characters that can be part of a value (no space,
   quote, bracket, comma or semicolon), each run whole, its part after the first `=`
   (`KEY=value`), and its pieces between `:`, `@`, `/`, `?`, `&`, `#`, `=` (a password inside
   a URL). A value holding a space or one of those separators is found only as a whole run.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable
from itertools import compress

MIN_LENGTH = 8
DIGEST_SIZE = 12

_RUN = re.compile(r"""[^\s"'`,;()\[\]{}<>|\\]+""")
_STOP = re.compile(r"""["'`,;()\[\]{}<>|\\]""")
_PIECE = re.compile(r"[:@/?&#=]")


def new_salt() -> str:
    return secrets.token_hex(16)


def fingerprint(value: str, salt: str) -> str:
    """The keyed hash of one value (rule 2)."""
    key = bytes.fromhex(salt)
    return hashlib.blake2b(value.encode(), key=key, digest_size=DIGEST_SIZE).hexdigest()


def fingerprints(values: Iterable[str], salt: str) -> tuple[list[int], list[str]]:
    """(lengths, hashes) of the values long enough to be secrets (rule 1), sorted."""
    kept = {v for v in values if len(v) >= MIN_LENGTH}
    return sorted({len(v) for v in kept}), sorted(fingerprint(v, salt) for v in kept)


def candidates(text: str, lengths: frozenset[int]) -> set[str]:
    """The distinct tokens of `text` that could be a fingerprinted value (rule 3), of those
    lengths. Whitespace splits first and words too short for any value are dropped, all in C
    (`str.split`, `map`, `compress`); only the distinct long words are looked at one by one."""
    found: set[str] = set()
    if not lengths:
        return found
    shortest = min(lengths)
    words = text.split()
    for word in set(compress(words, map(shortest.__le__, map(len, words)))):
        for run in _RUN.findall(word) if _STOP.search(word) else (word,):
            if len(run) in lengths:
                found.add(run)
            if len(run) > shortest and _PIECE.search(run):
                _, eq, value = run.partition("=")
                if eq and len(value) in lengths:
                    found.add(value)
                found.update(p for p in _PIECE.split(run) if len(p) in lengths)
    return found
