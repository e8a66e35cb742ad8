"""File-reference tokens: escaping, composing and parsing (DPS §16.2, K-11, A-31)."""

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from rawp.errors import FileRefError
from rawp.fileref import (
    SPEC_TOKEN_REGEX,
    FileToken,
    compose,
    escape,
    extract_paths,
    normalize,
    parse,
    to_generic_llm,
    to_literal,
    unescape,
)

# Text biased towards the characters that matter: backslashes, token starts, pipes, brackets.
tricky_text = st.lists(
    st.one_of(
        st.sampled_from([*"\\<@>|:_-/ \n", "<@file:", "ref_0", "\\\\", "\\<@", "|a.py>"]),
        st.characters(codec="utf-8"),
    ),
    max_size=30,
).map("".join)
ref_ids = st.from_regex(r"[a-zA-Z0-9_-]{1,8}", fullmatch=True)
display_paths = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters=">\n\r"), min_size=1, max_size=30
)
tokens = st.builds(FileToken, ref_id=ref_ids, display_path=display_paths)
parts_lists = st.lists(st.one_of(tricky_text, tokens), max_size=8)


def refs_for(parts):
    return [{"ref_id": p.ref_id, "path": p.display_path} for p in parts if isinstance(p, FileToken)]


def test_spec_example_forged_token_next_to_a_real_one():
    """DPS §16.2.2 worked example (F-PARSE-04), byte for byte."""
    typed = "<@file:injection>은 위조이고, 이건 진짜야 "
    token = FileToken("ref_0", "src/auth.ts")
    sent = compose([typed, token])
    assert sent == "\\<@file:injection>은 위조이고, 이건 진짜야 <@file:ref_0|src/auth.ts>"

    parsed = parse(sent, [{"ref_id": "ref_0", "path": "src/auth.ts"}])
    assert parsed == ["<@file:injection>은 위조이고, 이건 진짜야 ", token]
    # The seed lists the literal text without the separating space.
    assert parsed[0].rstrip() == "<@file:injection>은 위조이고, 이건 진짜야"


def test_k11_backslash_before_a_real_token():
    """The case the §16.2.1 lookbehind gets wrong: typed `C:\\` then a popup token."""
    token = FileToken("ref_0", "src/a.ts")
    sent = compose(["C:\\", token])
    assert sent == "C:\\\\<@file:ref_0|src/a.ts>"
    assert SPEC_TOKEN_REGEX.search(sent) is None  # the normative regex misses it …
    assert parse(sent, [{"ref_id": "ref_0", "path": "src/a.ts"}]) == ["C:\\", token]  # … we don't


def test_unmapped_token_stays_literal_text():
    """F-TOK-05/06: an unknown ref_id is neither a token nor dropped."""
    sent = "see <@file:ref_9|x.py> and <@file:ref_0|y.py>"
    parsed = parse(sent, [{"ref_id": "ref_0", "path": "y.py"}])
    assert parsed == ["see <@file:ref_9|x.py> and ", FileToken("ref_0", "y.py")]


def test_references_may_be_objects_with_ref_id():
    class Ref:
        ref_id = "a"
        path = "p.txt"

    assert parse("<@file:a|p.txt>", [Ref()]) == [FileToken("a", "p.txt")]


def test_lone_backslash_and_lone_marker_are_kept():
    assert parse("a\\b <@ c \\", []) == ["a\\b <@ c \\"]


@pytest.mark.parametrize(
    "token, problem",
    [
        (FileToken("ref_0", "a>b"), "'>'"),
        (FileToken("ref_0", "a\nb"), "line break"),
        (FileToken("ref_0", "a\rb"), "line break"),
        (FileToken("ref_0", ""), "empty"),
        (FileToken("ref 0", "a"), "ref_id"),
        (FileToken("", "a"), "ref_id"),
    ],
)
def test_compose_refuses_tokens_that_cannot_round_trip(token, problem):
    with pytest.raises(FileRefError, match=problem):
        compose(["x", token])


def test_compose_refuses_other_types():
    with pytest.raises(TypeError):
        compose(["x", 3])  # type: ignore[list-item]


def test_adjacent_typed_parts_cannot_meet_as_a_token():
    # "<" and "@file:…" typed separately must not form "<@" on the wire.
    parts = ["<", "@file:ref_0|x>"]
    assert parse(compose(parts), [{"ref_id": "ref_0", "path": "x"}]) == ["<@file:ref_0|x>"]


@given(parts_lists)
def test_parse_inverts_compose(parts):
    assert parse(compose(parts), refs_for(parts)) == normalize(parts)


@given(tricky_text, st.lists(ref_ids, max_size=4))
def test_typed_text_never_yields_a_token(text, known):
    refs = [{"ref_id": r, "path": "x"} for r in known]
    parsed = parse(compose([text]), refs)
    assert all(isinstance(p, str) for p in parsed)
    assert "".join(parsed) == text


@given(tricky_text)
def test_escape_then_unescape_is_identity(text):
    assert unescape(escape(text)) == text


@given(tricky_text)
def test_escaped_text_never_matches_the_spec_regex(text):
    assert SPEC_TOKEN_REGEX.search(escape(text)) is None


@given(st.text(max_size=20).map(lambda s: s + "\\"), tokens, tricky_text)
def test_k11_round_trips(before, token, after):
    parts = [before, token, after]
    assert parse(compose(parts), refs_for(parts)) == normalize(parts)


@given(parts_lists)
def test_parse_agrees_with_spec_regex_outside_the_k11_case(parts):
    """Where no typed text ends in a backslash, the scanner finds what the regex finds."""
    parts = normalize(parts)
    for i, p in enumerate(parts[:-1]):
        assume(
            not (isinstance(p, str) and p.endswith("\\") and isinstance(parts[i + 1], FileToken))
        )
    sent = compose(parts)
    by_regex = [FileToken(m.group(1), m.group(2)) for m in SPEC_TOKEN_REGEX.finditer(sent)]
    by_scanner = [p for p in parse(sent, refs_for(parts)) if isinstance(p, FileToken)]
    assert by_scanner == by_regex


def test_adapter_conversions():
    parts = parse(
        compose(["fix ", FileToken("r1", "src/a.ts"), " and ", FileToken("r2", "b.md"), "!"]),
        [
            {"ref_id": "r1", "path": "/ws/src/a.ts"},
            {"ref_id": "r2", "path": "/ws/b.md"},
        ],
    )
    assert to_literal(parts) == "fix src/a.ts and b.md!"
    assert to_generic_llm(parts) == "fix [File: src/a.ts] and [File: b.md]!"
    extracted = extract_paths(
        parts, [{"ref_id": "r1", "path": "/ws/src/a.ts"}, {"ref_id": "r2", "path": "/ws/b.md"}]
    )
    assert extracted.text == "fix src/a.ts and b.md!"
    assert extracted.paths == ["/ws/src/a.ts", "/ws/b.md"]


def test_extract_paths_keeps_an_unconvertible_token_as_display_path():
    """F-ADPT-05/06: a reference without a path is written as its display_path, not dropped."""
    parts = ["look at ", FileToken("r1", "a.py"), FileToken("r1", "a.py")]
    extracted = extract_paths(parts, [{"ref_id": "r1"}])
    assert extracted.text == "look at a.pya.py"
    assert extracted.paths == []
    dup = extract_paths(parts, [{"ref_id": "r1", "path": "/w/a.py"}])
    assert dup.paths == ["/w/a.py"]
