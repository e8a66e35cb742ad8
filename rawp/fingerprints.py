"""Fingerprints of secret values: how an edge redacts a workspace's `.env` values it never sees.

The `.env` file is on the client's machine; the text that reaches a chat is rendered by the
gateway. The client sends, in `session.capabilities` (`secret_fingerprints`), a keyed hash of
each value and the set of value lengths; the gateway hashes the candidate tokens of outgoing
text of those lengths and redacts a token whose hash is one of them (issue 15 §3). Rules:

1. Only values of at least `MIN_LENGTH` characters are fingerprinted: shorter ones (`true`,
   `8080`, `dev`) are configuration, not secrets, and would redact ordinary words.
2. The hash is BLAKE2b of the value's UTF-8 bytes (lengths count those bytes), keyed with a
   random per-session salt, cut to 96 bits: fast enough to test every candidate of 100 KB
   within the render budget, salted so one session's fingerprints say nothing about
   another's. Whoever holds salt and hashes (the master and its edges, which already relay
   everything the agent prints) can test guesses of a value; chat users never see them.
3. Candidates of a text are its runs of bytes that can be part of a value (no ASCII
   whitespace, quote, bracket, comma, semicolon, `|` or backslash), each run whole, its part
   after the first `=` (`KEY=value`), and its pieces between `:`, `@`, `/`, `?`, `&`, `#`,
   `=` (a password inside a URL). A value holding one of those separators is found only as a
   whole run; one holding a stop character or a space is not found.
4. Bounds: values over `MAX_VALUE_BYTES`, and past `MAX_HASHES` values or `MAX_LENGTHS`
   distinct lengths, are left out; an edge ignores fingerprints outside these bounds or with
   a salt that is not 8–64 bytes of hex (a key BLAKE2b takes).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

MIN_LENGTH = 8
DIGEST_SIZE = 12
# Rule 4: what an edge accepts, so a client cannot make it compile or hash without bound.
MAX_VALUE_BYTES = 8192
MAX_LENGTHS = 128
MAX_HASHES = 1024

_STOPS = b"\"'`,;()[]{}<>|\\"
_PIECES = b":@/?&#="
# Rule 3 in C: stops (and, for pieces, separators too) become spaces, then `bytes.split`.
# UTF-8 never puts an ASCII byte inside a multi-byte character, so this cuts only there.
_TO_RUNS = bytes.maketrans(_STOPS, b" " * len(_STOPS))
_TO_PIECES = bytes.maketrans(_STOPS + _PIECES, b" " * (len(_STOPS) + len(_PIECES)))


def new_salt() -> str:
    return secrets.token_hex(16)


def fingerprint(value: str | bytes, salt: str) -> str:
    """The keyed hash of one value's UTF-8 bytes (rule 2)."""
    data = value.encode() if isinstance(value, str) else value
    return hashlib.blake2b(data, key=bytes.fromhex(salt), digest_size=DIGEST_SIZE).hexdigest()


def fingerprints(values: Iterable[str], salt: str) -> tuple[list[int], list[str]]:
    """(lengths in UTF-8 bytes, hashes) of the values long enough to be secrets (rule 1),
    within the bounds of rule 4 (the first values in order, when there are more)."""
    kept: list[bytes] = []
    lengths: set[int] = set()
    for value in dict.fromkeys(v.encode() for v in values if len(v) >= MIN_LENGTH):
        if len(value) > MAX_VALUE_BYTES or len(kept) == MAX_HASHES:
            continue
        if len(value) not in lengths and len(lengths) == MAX_LENGTHS:
            continue
        kept.append(value)
        lengths.add(len(value))
    return sorted(lengths), sorted(fingerprint(v, salt) for v in kept)


def acceptable(salt: str, lengths: list[int], hashes: list[str]) -> bool:
    """Whether fingerprints a client sent are within rule 4 (an edge ignores others)."""
    try:
        key = bytes.fromhex(salt)
    except ValueError:
        return False
    return (
        8 <= len(key) <= 64
        and len(set(lengths)) <= MAX_LENGTHS
        and len(hashes) <= MAX_HASHES
        and all(MIN_LENGTH <= n <= MAX_VALUE_BYTES for n in lengths)
    )


def padded_runs(text: str) -> bytes:
    """`text` as UTF-8 with every stop made a space and a space at each end (rule 3)."""
    return b" " + text.encode("utf-8", "surrogatepass").translate(_TO_RUNS) + b" "


def candidates(text: str, lengths: frozenset[int]) -> set[bytes]:
    """The distinct tokens of `text` (UTF-8) that could be a fingerprinted value (rule 3), of
    those byte lengths, found in Python (the gateway has a faster way,
    gateway.redaction.redact_gate)."""
    if not lengths:
        return set()
    runs = padded_runs(text).split()
    tokens = set(runs)
    tokens.update(p for run in tokens.copy() for p in run.translate(_TO_PIECES).split())
    # After any `=` to the run's end: `KEY=value` whose value holds a `=` (base64 padding).
    for run in [r for r in tokens if b"=" in r]:
        parts = run.split(b"=")
        tokens.update(b"=".join(parts[i:]) for i in range(1, len(parts)))
    return {t for t in tokens if len(t) in lengths}
