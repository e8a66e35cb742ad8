"""File-reference tokens inside `prompt_text` (RAWP-DPS 1.0 §16.2–§16.3).

A prompt is a sequence of *parts*: text the user typed (`str`) and files picked from a popup
(`FileToken`). On the wire it is one string:

* typed text is escaped — `\\` becomes `\\\\` and `<@` becomes `\\<@` (§16.2.2 escape table);
* a picked file is written verbatim as `<@file:ref_id|display_path>` (§16.2.1), never escaped.

Rules, in the order they are enforced here:

1. Only `compose` writes tokens, and only from `FileToken` items; `escape` guarantees no typed
   text ever reads back as a token (F-TOK-02/03, X-SEC-06).
2. `parse` scans left to right (project decision K-11): `\\\\` is a literal backslash, `\\<@` a
   literal `<@`, and `<@file:ID|PATH>` reached outside an escape is a token. This agrees with the
   §16.2.1 regex everywhere except where the regex is wrong: typed text ending in `\\` before a
   real token (`C:\\\\<@file:ref_0|a.ts>`), which the lookbehind rejects and the scanner accepts.
3. A token whose `ref_id` is not in `file_references` stays in the text as written — literal,
   never dropped (F-TOK-05/06).
4. Agent adapters convert tokens (§16.3); where a token cannot be converted its `display_path`
   goes to the agent as literal text (F-ADPT-05/06).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rawp.errors import FileRefError

# §16.2.1, kept for reference and for callers that must match the normative regex exactly.
# `parse` does not use the lookbehind (K-11); it uses TOKEN_AT, anchored where the scanner stands.
SPEC_TOKEN_REGEX = re.compile(r"(?<!\\)<@file:([a-zA-Z0-9_-]+)\|([^>]+)>")
TOKEN_AT = re.compile(r"<@file:([a-zA-Z0-9_-]+)\|([^>]+)>")
REF_ID = re.compile(r"[a-zA-Z0-9_-]+")


@dataclass(frozen=True, slots=True)
class FileToken:
    """A file the user picked in the popup: `ref_id` keys into `file_references`."""

    ref_id: str
    display_path: str

    def render(self) -> str:
        """The token as it stands in `prompt_text`."""
        return f"<@file:{self.ref_id}|{self.display_path}>"


Part = str | FileToken


def escape(text: str) -> str:
    """Escape typed text so that it can never form a token (§16.2.2; F-ESC-01/02)."""
    # Order matters: backslashes first, or the backslash added before `<@` would be doubled.
    return text.replace("\\", "\\\\").replace("<@", "\\<@")


def unescape(text: str) -> str:
    """Undo `escape` on a text run that holds no token (F-PARSE-03)."""
    return "".join(p for p in _scan(text, frozenset()) if isinstance(p, str))


def validate_token(token: FileToken) -> None:
    """Refuse a token that could not be read back as written (§16.2.1 grammar, A-31)."""
    if not REF_ID.fullmatch(token.ref_id):
        raise FileRefError(
            f"ref_id {token.ref_id!r} must be made of letters, digits, '_' or '-' (DPS §16.2.1)"
        )
    path = token.display_path
    if not path:
        raise FileRefError("display_path must not be empty (DPS §16.2.1)")
    if ">" in path:
        raise FileRefError(f"display_path {path!r} must not contain '>' (DPS §16.2.1, A-31)")
    if "\n" in path or "\r" in path:
        raise FileRefError(f"display_path {path!r} must not contain a line break (A-31)")


def compose(parts: Iterable[Part]) -> str:
    """Build `prompt_text`: typed text escaped, popup tokens verbatim (F-ESC-02/03)."""
    out: list[str] = []
    # Merge adjacent typed text before escaping: "<" then "@file:…" typed as two parts must
    # not meet as an unescaped "<@" on the wire.
    for part in normalize(parts):
        if isinstance(part, FileToken):
            validate_token(part)
            out.append(part.render())
        else:
            out.append(escape(part))
    return "".join(out)


def parse(prompt_text: str, file_references: Iterable[Any] = ()) -> list[Part]:
    """Split `prompt_text` into unescaped text and valid tokens (F-ESC-04, F-PARSE-01…03, K-11).

    `file_references` holds the request's entries (dicts or objects with `ref_id`). Adjacent
    text is merged and empty text dropped, so `parse(compose(parts))` gives `parts` back in that
    normal form.
    """
    return _scan(prompt_text, _ref_ids(file_references))


def _ref_ids(file_references: Iterable[Any]) -> frozenset[str]:
    ids = set()
    for ref in file_references:
        ref_id = ref.get("ref_id") if isinstance(ref, Mapping) else getattr(ref, "ref_id", None)
        if isinstance(ref_id, str):
            ids.add(ref_id)
    return frozenset(ids)


def _scan(text: str, known_ids: frozenset[str]) -> list[Part]:
    parts: list[Part] = []
    run: list[str] = []  # literal characters since the last token
    i, n = 0, len(text)
    while i < n:
        # Jump to the next character that can start something special; copy the rest.
        j = _next_special(text, i)
        if j > i:
            run.append(text[i:j])
            i = j
            if i >= n:
                break
        if text.startswith("\\\\", i):
            run.append("\\")
            i += 2
        elif text.startswith("\\<@", i):
            run.append("<@")
            i += 3
        elif text.startswith("<@", i):
            match = TOKEN_AT.match(text, i)
            if match and match.group(1) in known_ids:
                if run:
                    parts.append("".join(run))
                    run = []
                parts.append(FileToken(match.group(1), match.group(2)))
                i = match.end()
            elif match:
                # Unmapped ref_id: the token stays literal text, never dropped (F-TOK-05/06).
                run.append(match.group(0))
                i = match.end()
            else:
                run.append("<@")
                i += 2
        else:
            # A lone backslash (one `escape` never writes) is kept as written.
            run.append(text[i])
            i += 1
    if run:
        parts.append("".join(run))
    return parts


def _next_special(text: str, start: int) -> int:
    """Index of the next `\\` or `<` at or after `start`, or len(text)."""
    b = text.find("\\", start)
    a = text.find("<", start)
    candidates = [x for x in (a, b) if x != -1]
    return min(candidates) if candidates else len(text)


def normalize(parts: Iterable[Part]) -> list[Part]:
    """Merge adjacent text and drop empty text: the form `parse` returns."""
    out: list[Part] = []
    for part in parts:
        if not isinstance(part, str | FileToken):
            raise TypeError(f"a prompt part is str or FileToken, not {type(part).__name__}")
        if isinstance(part, str):
            if not part:
                continue
            if out and isinstance(out[-1], str):
                out[-1] = out[-1] + part
                continue
        out.append(part)
    return out


# --- §16.3 adapter conversions --------------------------------------------------------------


def _path_of(ref: Any) -> str | None:
    value = ref.get("path") if isinstance(ref, Mapping) else getattr(ref, "path", None)
    return value if isinstance(value, str) and value else None


def _refs_by_id(file_references: Iterable[Any]) -> dict[str, Any]:
    by_id: dict[str, Any] = {}
    for ref in file_references:
        ref_id = ref.get("ref_id") if isinstance(ref, Mapping) else getattr(ref, "ref_id", None)
        if isinstance(ref_id, str):
            by_id[ref_id] = ref
    return by_id


def to_literal(parts: Sequence[Part]) -> str:
    """Every token replaced by its `display_path` — the fallback of F-ADPT-05."""
    return "".join(p.display_path if isinstance(p, FileToken) else p for p in parts)


def to_generic_llm(parts: Sequence[Part]) -> str:
    """For a model with no notion of files: `[File: display_path]` in place (F-ADPT-03)."""
    return "".join(f"[File: {p.display_path}]" if isinstance(p, FileToken) else p for p in parts)


@dataclass(frozen=True, slots=True)
class ExtractedPrompt:
    """A prompt whose tokens were lifted out: `text` for the agent, `paths` for its files."""

    text: str
    paths: list[str]


def extract_paths(parts: Sequence[Part], file_references: Iterable[Any]) -> ExtractedPrompt:
    """Lift each token's file out of the text (F-ADPT-02 context files, F-ADPT-04 arguments).

    The token's place in the sentence keeps its `display_path` as plain text, so "find the bug
    in <token>" still reads as a sentence and nothing the user wrote disappears (A-32: this
    project never deletes a token outright). A token whose reference has no `path` cannot be
    converted and is only written as its `display_path` (F-ADPT-05). Paths keep prompt order,
    each once.
    """
    refs = _refs_by_id(file_references)
    paths: list[str] = []
    for part in parts:
        if isinstance(part, FileToken):
            path = _path_of(refs.get(part.ref_id))
            if path is not None and path not in paths:
                paths.append(path)
    return ExtractedPrompt(text=to_literal(parts), paths=paths)
