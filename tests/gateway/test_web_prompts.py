"""The web edge's own prompts (gateway.storage.web_prompts, issue 28 §1) on a real SQLite file and a
real PostgreSQL: kept once per message, read back per session and subject in the order sent,
bounded per session and subject and by age, shared by two store handles (two replicas); and
the typed text read off a prompt frame, checked on generated prompts."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from gateway.storage.conversation_store import ConversationStore
from gateway.storage.web_prompts import MAX_AGE_S, TEXT_MAX, WebPrompts, prompt_of, typed_text
from rawp.fileref import FileToken, compose
from tests.gateway.store_support import store_target  # noqa: F401  (fixture)


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_prompts_come_back_in_order_once_each_for_their_subject_only(store_target):  # noqa: F811
    one = await ConversationStore.open(store_target)
    two = await ConversationStore.open(store_target)
    try:
        first, second = WebPrompts(one.database), WebPrompts(two.database)
        await first.record("discord:1", "s1", "m1", "fix the bug")
        await second.record("discord:1", "s1", "m2", "and the test")  # another replica
        await first.record("discord:1", "s1", "m1", "fix the bug")  # sent again: still one
        await first.record("discord:2", "s1", "m3", "someone else")
        await first.record("discord:1", "s2", "m4", "another session")
        shown = await second.of_session("discord:1", "s1")
        assert [(p.message_id, p.text) for p in shown] == [
            ("m1", "fix the bug"),
            ("m2", "and the test"),
        ]
        await second.forget("discord:1", "s1")
        assert await first.of_session("discord:1", "s1") == []
        assert [p.message_id for p in await first.of_session("discord:2", "s1")] == ["m3"]
    finally:
        await one.close()
        await two.close()


async def test_only_the_newest_are_kept_per_session_and_subject_and_none_too_old(store_target):  # noqa: F811
    store = await ConversationStore.open(store_target)
    clock = Clock()
    try:
        prompts = WebPrompts(store.database, kept=3, now=clock)
        for n in range(5):
            await prompts.record("slack:T:U", "s1", f"m{n}", f"prompt {n}")
        await prompts.record("slack:T:U", "s2", "old", "in another session")
        kept = await prompts.of_session("slack:T:U", "s1")
        assert [p.message_id for p in kept] == ["m2", "m3", "m4"]
        assert [p.message_id for p in await prompts.of_session("slack:T:U", "s2")] == ["old"]
        clock.now += MAX_AGE_S + 1
        await prompts.record("slack:T:U", "s1", "m5", "a month later")
        assert await prompts.of_session("slack:T:U", "s2") == []
        assert [p.message_id for p in await prompts.of_session("slack:T:U", "s1")] == ["m5"]
    finally:
        await store.close()


def frame(payload, **envelope):
    return orjson.dumps(
        {"type": "control.prompt.request", "message_id": "m1", "session_id": "s1",
         "payload": payload, **envelope}
    ).decode()  # fmt: skip


def test_only_well_formed_prompts_for_this_session_are_taken():
    assert prompt_of(frame({"prompt_text": "hi"}), "s1") == ("m1", "hi")
    assert prompt_of(frame({"prompt_text": "hi"}), "s2") is None
    assert prompt_of(frame({"prompt_text": 3}), "s1") is None
    assert prompt_of(frame({"prompt_text": "hi"}, message_id=None), "s1") is None
    assert prompt_of(frame({"prompt_text": "hi"}, type="control.prompt.cancel"), "s1") is None
    assert prompt_of('{"type": "control.prompt.request", "payload": ', "s1") is None
    assert prompt_of(frame({"prompt_text": "x" * (TEXT_MAX + 5)}), "s1")[1] == "x" * TEXT_MAX


typed = st.text(alphabet="ab <@\\|>:file_", max_size=20)
paths = st.text(alphabet="abc/._-", min_size=1, max_size=10)


@given(st.lists(st.one_of(typed, paths.map(lambda p: FileToken("ref_0", p))), max_size=6))
def test_the_typed_text_is_what_the_reader_typed(parts):
    # The page shows `@path` for a picked file and the typed characters as typed: the kept
    # text reads the same, whatever the typed text holds (escapes, `<@`, backslashes).
    refs = [{"ref_id": "ref_0", "path": "x"}]
    wire = compose(parts)
    expected = "".join(f"@{p.display_path}" if isinstance(p, FileToken) else p for p in parts)
    assert typed_text(wire, refs) == expected
    assert prompt_of(frame({"prompt_text": wire, "file_references": refs}), "s1") == (
        "m1",
        expected[:TEXT_MAX],
    )
