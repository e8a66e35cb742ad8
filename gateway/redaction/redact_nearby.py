"""Secrets written beside a credential (issue 28 §4, gateway.redaction.redact rule 6).

A secret often travels without a format of its own: an AWS secret access key is 40 characters
of base64 like many others, and an answer such as "AWS key id AKIA… with secret q8Vb…" names
it only by what stands next to it. The format rules (gateway.redaction.redact rule 1) find the key
id and `AWS_SECRET_ACCESS_KEY=…`, not that. Rules:

1. An *anchor* is an AWS access key id (or the marker the format rules made of it), or one
   of the words `password`, `passwd`, `passphrase`, `secret`, `token`, `api key`,
   `access key`, `private key`, `credential(s)` in any case, in an identifier too
   (`client_secret`, `DB_PASSWORD`, `apiToken`) but not inside another word (`tokenizer`) —
   and outside an earlier `[redacted: …]` marker, so redacting stays idempotent.
2. A token *next to* it follows within a few words: after the anchor come at most four words
   (letters, or the rest of an identifier: `_ACCESS_KEY`) with spaces, the punctuation of
   prose, code and config (`:`, `=`, quotes, brackets, `,`, `/`, `|`) and single line breaks
   between them, then the token — the first run of token characters that is not a word. A
   blank line, a dot, a number or a low-entropy token in between ends the search: what
   follows is not the anchor's.
3. The token is high-entropy: 16 or more characters of the base64/URL-safe alphabet, of two
   kinds at least (lower case, upper case, digits, symbols), with `MIN_ENTROPY` bits of
   Shannon entropy per character or more (a random 16-character token has about 3.8), and
   not mostly words: less than `MAX_WORDY` of it in runs of four or more letters of one case
   (`v1/edge/auth/token`, `OAuth2ClientCredentials` are names). Random base64 passes: 98.5 %
   of 20-character tokens, 99.9 % of 40-character ones (tests/gateway/test_redact.py).
   It is redacted as part of the credential: `[redacted: AWS secret key]` after an AWS key
   id, `[redacted: secret]` after a word.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterator

from gateway.redaction.redact_gate import Gate

MIN_LENGTH = 16
MIN_ENTROPY = 3.0  # bits per character (rule 3)
MAX_WORDY = 0.6  # the share of a token in word-like runs that makes it a name (rule 3)

# The key id as written, or as the format rules left it (they run first: gateway.redaction.redact).
AWS_ID_MARKER = "[redacted: AWS access key]"
_AWS_ID = (
    r"(?:(?<![A-Z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])|"
    + re.escape(AWS_ID_MARKER)
    + ")"
)
# A word on its own or in an identifier — `client_secret`, `SECRET_KEY`, `apiToken`,
# `SecretAccessKey` — but not inside another word (`tokenizer`, `secretary`, `keytoken`).
_WORD = (
    r"(?:(?<![A-Za-z])(?i:pass(?:word|wd|phrase)|secret|token|credential"
    r"|(?:api|access|private)[ _-]?key)|(?<=[a-z])(?:Pass(?:word|wd|phrase)|Secret|Token"
    r"|Credential))s?(?![a-z])"
)
# Rule 2: what follows an anchor, a step at a time: a separator (spaces, the punctuation of
# prose, code and config, one line break), then a run of token characters (`=` only as
# base64's padding at its end: `SECRET_ACCESS_KEY=…` is a name, then the token).
_STEP = re.compile(
    r"((?:[ \t\\\"'`:=,;|(\[{<>*]|\r?\n(?![ \t]*\r?\n))*)([A-Za-z0-9+/_~-]*=*)", re.ASCII
)
_NAME = re.compile(r"[A-Za-z_-]{1,24}")  # a word, or the rest of an identifier (`_ACCESS_KEY`)
_PUNCTUATION = re.compile(r"[+/=_~-]+")  # `AKIA… / secret`, `--password -- secret`
MAX_WORDS = 4

AWS_KIND, WORD_KIND = "AWS secret key", "secret"
_AWS_ANCHOR = re.compile(_AWS_ID, re.ASCII)
_WORD_ANCHOR = re.compile(_WORD, re.ASCII)
_MARKER = re.compile(r"\[redacted: [^\]]*\]")
# Where an anchor may start: one Hyperscan pass (gateway.redaction.redact_gate) names the hints the
# lower-cased text holds, `str.find` places them, and each place is tried with its rule
# there. Scanning with the rules themselves costs milliseconds on a long answer, more than
# the render budget (docs/benchmarks.md); this, a tenth of one.
_AWS_HINTS = ("akia", "asia", "abia", "acca", "a3t", AWS_ID_MARKER.lower())
_WORD_HINTS = ("pass", "secret", "token", "credential", "api", "access", "private")
_HINTS = (*_AWS_HINTS, *_WORD_HINTS)
_WORDY = re.compile(r"[A-Z]?[a-z]{4,}|[A-Z]{4,}")
_SYMBOL = frozenset("+/=_~-")


@functools.cache
def _gate() -> Gate:
    return Gate([re.compile(re.escape(hint)) for hint in _HINTS])


def entropy(token: str) -> float:
    """Shannon entropy of `token`, in bits per character."""
    counts = Counter(token)
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def high_entropy(token: str) -> bool:
    """Rule 3."""
    if len(token) < MIN_LENGTH or entropy(token) < MIN_ENTROPY:
        return False
    classes = (str.islower, str.isupper, str.isdigit, _SYMBOL.__contains__)
    if sum(any(map(test, token)) for test in classes) < 2:
        return False
    # Made of words (`v1/edge/auth/token`, `OAuth2ClientCredentials`): a name, not a secret.
    wordy = sum(len(run) for run in _WORDY.findall(token))
    return wordy < MAX_WORDY * len(token)


def nearby_secrets(text: str) -> Iterator[tuple[int, int, str]]:
    """`(start, end, kind)` of each token that rules 1–3 take for part of a credential."""
    # ASCII-only folding keeps every offset (`"İ".lower()` is two characters); the rules
    # and the hints are ASCII (gateway.redaction.redact_gate reads text the same way).
    lower = text.encode("ascii", "replace").lower().decode("ascii")
    present = {_HINTS[index] for index in _gate().candidates(lower)}
    if not present:
        return
    markers = [m.span() for m in _MARKER.finditer(text)] if "[redacted: " in text else []
    for kind, anchor, hints in (
        (AWS_KIND, _AWS_ANCHOR, _AWS_HINTS),
        (WORD_KIND, _WORD_ANCHOR, _WORD_HINTS),
    ):
        for at in _places(lower, [hint for hint in hints if hint in present]):
            if kind == WORD_KIND and any(start <= at < end for start, end in markers):
                continue  # a marker's own words are no anchor (rule 1)
            found = anchor.match(text, at)  # lookbehinds still see the text before `at`
            token = _token_after(text, found.end()) if found is not None else None
            if token is not None:
                yield *token, kind


def _token_after(text: str, at: int) -> tuple[int, int] | None:
    """Rule 2: the span of the high-entropy token a few words after `at`, or None."""
    words = 0
    while True:
        step = _STEP.match(text, at)
        run = step.group(2)
        if not run:
            return None  # a dot, a blank line, the end: not the anchor's
        if high_entropy(run):
            return step.span(2)
        if _PUNCTUATION.fullmatch(run) is None:
            if words == MAX_WORDS or _NAME.fullmatch(run) is None:
                return None  # a number, a low-entropy token, or too far
            words += 1
        at = step.end()


def _places(lower: str, hints: list[str]) -> Iterator[int]:
    for hint in hints:
        at = lower.find(hint)
        while at != -1:
            yield at
            at = lower.find(hint, at + 1)
