"""Prompt building: escaping once, file tokens, slash commands, attachment limits (DPS §6, §16)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.sessions.prompt import (
    CommandCache,
    PickedFile,
    PromptDraft,
    PromptError,
    slash_prompt,
    text_prompt,
)
from rawp.attachments import AttachmentLimits
from rawp.clock import new_id
from rawp.config import DEFAULT_LIMITS
from rawp.events import Command, CommandsPublish
from rawp.fileref import FileToken, normalize, parse
from rawp.frames import dump_frame, make_frame

ID = new_id()
TRICKY = st.lists(
    st.sampled_from(["<", "@", "\\", "file:", "|", ">", "a", " ", "ref_0"]), max_size=12
).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(
        st.one_of(TRICKY, st.sampled_from(["src/a.ts", "docs/read me.md", "src/a.ts"])),
        max_size=8,
    ),
    picks=st.lists(st.booleans(), max_size=8),
)
def test_typed_text_never_becomes_a_token_and_picks_always_do(pieces, picks):
    draft = PromptDraft()
    expected = []
    for piece, is_file in zip(pieces, picks + [False] * len(pieces), strict=False):
        if is_file and piece in ("src/a.ts", "docs/read me.md"):
            expected.append(draft.add_file(PickedFile(path=piece)))
        else:
            draft.add_text(piece)
            expected.append(piece)
    if not "".join(p if isinstance(p, str) else "x" for p in expected).strip():
        return  # an empty prompt is refused; tested below
    request = draft.build()
    assert parse(request.prompt_text, request.file_references) == normalize(expected)
    tokens = {p.ref_id for p in expected if isinstance(p, FileToken)}
    assert {r.ref_id for r in request.file_references} == tokens


def test_the_same_file_picked_twice_shares_one_reference():
    draft = PromptDraft()
    draft.add_text("compare ")
    first = draft.add_file(PickedFile(path="src/a.ts", name="a.ts", size_bytes=10))
    draft.add_text(" with ")
    second = draft.add_file(PickedFile(path="src/a.ts"))
    request = draft.build()
    assert first == second == FileToken("ref_0", "src/a.ts")
    assert request.prompt_text == "compare <@file:ref_0|src/a.ts> with <@file:ref_0|src/a.ts>"
    assert [r.model_dump(exclude_none=True) for r in request.file_references] == [
        {"ref_id": "ref_0", "path": "src/a.ts", "display_path": "src/a.ts", "name": "a.ts",
         "size_bytes": 10}
    ]  # fmt: skip


def test_typed_token_lookalike_is_escaped():
    request = text_prompt(r"see <@file:ref_0|x> and C:\dir")
    assert request.prompt_text == r"see \<@file:ref_0|x> and C:\\dir"
    assert request.input_type == "text" and request.file_references == []


def test_empty_prompt_is_refused():
    with pytest.raises(PromptError, match="empty"):
        text_prompt("   ")


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(st.characters(codec="utf-8"), min_size=1, max_size=1500),
    repeat=st.integers(min_value=1, max_value=4),
    limit=st.integers(min_value=1024, max_value=6000),
)
def test_a_prompt_is_built_only_when_its_frame_fits(text, repeat, limit):
    # Issue 28 §3: whatever the text (JSON escapes included), a prompt the gateway builds fits
    # in one frame of the limit, and one that would not is refused with the limit in words.
    draft = PromptDraft(max_frame_size=limit)
    draft.add_text(text * repeat)
    try:
        request = draft.build()
    except PromptError as refused:
        if not (text * repeat).strip():
            return  # the empty prompt's own refusal
        assert "too long" in str(refused) and f"{limit:,} bytes" in str(refused)
        sent = make_frame("control.prompt.request", {"prompt_text": text * repeat}, session_id=ID)
        assert len(dump_frame(sent).encode()) > limit
        return
    frame = make_frame("control.prompt.request", request, session_id=ID)
    assert len(dump_frame(frame).encode()) <= limit


def test_a_two_megabyte_message_is_refused_before_it_is_sent():
    with pytest.raises(PromptError) as refused:
        text_prompt("x" * 2_000_000)
    assert str(refused.value) == (
        "this message is too long to send: a prompt may be at most 1.0 MB (1,048,576 bytes), "
        "and this one is 1.9 MB. Shorten it or send it in parts."
    )
    # Just under the default limit still goes: only the frame's own envelope is left over.
    assert text_prompt("x" * (DEFAULT_LIMITS.max_frame_size - 300)).prompt_text


def test_attachments_within_limits_and_refused_beyond():
    limits = AttachmentLimits(max_count=2, max_bytes_each=10, max_encoded_total=20)
    draft = PromptDraft(attachment_limits=limits)
    draft.add_text("look")
    draft.add_attachment("a.png", "image/png", b"12345")
    with pytest.raises(PromptError, match="at most 10 bytes"):
        draft.add_attachment("big.bin", "application/octet-stream", b"x" * 11)
    with pytest.raises(PromptError, match=r"b\.png does not fit"):
        draft.add_attachment("b.png", "image/png", b"1234567890")  # 16 base64 chars: 8 + 16 > 20
    draft.add_attachment("c.png", "image/png", b"12")
    with pytest.raises(PromptError, match="at most 2 attachments"):
        draft.add_attachment("d.png", "image/png", b"1")
    request = draft.build()
    assert [a.name for a in request.attachments] == ["a.png", "c.png"]
    assert base64.b64decode(request.attachments[0].data) == b"12345"


def cache() -> CommandCache:
    commands = CommandCache()
    commands.update(
        CommandsPublish(
            commands=[
                Command(name="compact", description="Shrink context", category="session"),
                Command(name="cost", description="Show cost", category="display"),
                Command(
                    name="review",
                    description="Review a branch",
                    parameters=[{"name": "branch", "required": True}],
                ),
            ]
        )
    )
    return commands


def test_slash_commands_match_only_published_names_at_the_start():
    commands = cache()
    command, args = commands.match("/compact focus on auth")
    assert command.name == "compact" and args == "focus on auth"
    assert commands.match("/etc/hosts is odd") is None
    assert commands.match("see path/to/file") is None
    request = slash_prompt(command, args)
    assert request.input_type == "slash_command"
    assert request.prompt_text == "/compact focus on auth"


def test_slash_command_listing_and_required_parameters():
    commands = cache()
    assert commands.describe("co") == ["/cost — Show cost", "/compact — Shrink context"]
    assert "/review <branch> — Review a branch" in commands.describe()
    with pytest.raises(PromptError, match="<branch>"):
        slash_prompt(commands.get("review"))
    assert slash_prompt(commands.get("review"), "main").prompt_text == "/review main"
