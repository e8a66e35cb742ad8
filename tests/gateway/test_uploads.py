"""Files the agent sends, through the real renderer (gateway.rendering.uploads): uploaded once
whole, a clear line where they cannot be, and never twice after a restart (real SQLite store)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.platform import ConversationRef, PlatformLimits
from gateway.rendering.render import RenderOptions, SessionRenderer
from gateway.rendering.uploads import MAX_NAME, safe_name
from gateway.sessions.live import CursorKeeper
from gateway.storage.conversation_store import ConversationStore
from rawp.clock import FakeClock
from tests.gateway.support import RecordingPlatform, frame

THREAD = ConversationRef("recording", "chan", "thread")
GITHUB = "ghp_Q7wE9rT2yU4iO6pA8sD0fG1hJ3kL5zX7cV9b"


class UploadingPlatform(RecordingPlatform):
    """The recording platform, taking files up to `max_upload_bytes`."""

    def __init__(self, max_upload_bytes: int = 1000, fail: frozenset[str] = frozenset()):
        limits = PlatformLimits(2000, typing_expiry_s=10.0, max_upload_bytes=max_upload_bytes)
        super().__init__(limits, fail)

    async def upload_file(self, conversation, name, mime_type, data):
        ref = self._ref(conversation)
        self._record("upload", name, mime_type, data)
        return ref


def file_frames(data: bytes, piece: int, name: str = "notes.txt", file_id: str = "f-1"):
    parts = [data[i : i + piece] for i in range(0, len(data), piece)]
    return [
        frame(
            "agent.file",
            {
                "file_id": file_id,
                "name": name,
                "mime_type": "text/plain",
                "size_bytes": len(data),
                "data": base64.b64encode(part).decode(),
                "chunk_index": index,
                "final": index == len(parts) - 1,
            },
        )
        for index, part in enumerate(parts)
    ]


def turn(*frames):
    start = frame("session.turn.start", {"turn_id": "turn-1", "prompt_message_id": "p-1"})
    end = frame("session.turn.end", {"turn_id": "turn-1", "stop_reason": "end_turn"})
    return [start, *frames, end]


async def _nowhere(_frame) -> None:
    raise AssertionError("nothing is sent to the session here")


def renderer(platform, store=None, **options) -> SessionRenderer:
    return SessionRenderer(
        platform,
        THREAD,
        "s-1",
        send_frame=_nowhere,
        store=store,
        options=RenderOptions(**options),
    )


def texts(platform: RecordingPlatform) -> list[str]:
    return [call[1] for call in platform.of("send")]


async def test_a_file_in_three_pieces_is_uploaded_once_whole():
    platform = UploadingPlatform()
    data = b"line one\nline two\nline three\n"
    shown = renderer(platform)
    pieces = file_frames(data, 12)
    assert len(pieces) == 3
    await shown.feed(turn()[0])
    assert shown.settled  # nothing held before the first piece…
    for each in pieces:
        await shown.feed(each)
        assert shown.settled == (each is pieces[-1])  # …and held until the last one came
    await shown.close()
    assert platform.of("upload") == [("upload", "notes.txt", "text/plain", data)]
    assert not [t for t in texts(platform) if t.startswith("📎")]


async def test_a_file_larger_than_the_platform_allows_gets_a_line_and_is_not_held():
    platform = UploadingPlatform(max_upload_bytes=2048)
    shown = renderer(platform)
    frames = turn(*file_frames(b"x" * 3000, 1000, name="report.pdf"))
    for each in frames[:2]:
        await shown.feed(each)
    assert shown.settled  # refused at its first piece: nothing is held for it
    for each in frames[2:]:
        await shown.feed(each)
    await shown.close()
    assert platform.of("upload") == []
    assert texts(platform) == [
        "📎 report.pdf (2.9 KB) is larger than Recording allows (2.0 KB), so it was not uploaded."
    ]


async def test_a_file_whose_last_piece_never_came_is_named_at_the_turn_end():
    platform = UploadingPlatform()
    shown = renderer(platform)
    for each in turn(*file_frames(b"abcdefgh", 3)[:-1]):
        await shown.feed(each)
    await shown.close()
    assert platform.of("upload") == []
    assert texts(platform) == ["📎 notes.txt was not posted: its last part never came."]
    assert shown.settled


async def test_a_file_over_the_gateways_cap_is_refused_clearly():
    platform = UploadingPlatform(max_upload_bytes=10_000)
    shown = renderer(platform, max_file_bytes=100)
    for each in turn(*file_frames(b"y" * 500, 200)):
        await shown.feed(each)
    await shown.close()
    assert platform.of("upload") == []
    assert texts(platform) == [
        "📎 notes.txt was not posted: it is larger than what the gateway holds for one session."
    ]


async def test_a_platform_without_uploads_names_the_file_instead():
    platform = RecordingPlatform()  # max_upload_bytes 0, the default: the console
    shown = renderer(platform)
    for each in turn(*file_frames(b"z" * 10, 4)):
        await shown.feed(each)
    await shown.close()
    assert texts(platform) == [
        "📎 The agent sent notes.txt (10 bytes); the recording here cannot show files, "
        "so it was not posted."
    ]


async def test_a_refused_upload_is_a_line_and_the_turn_goes_on():
    platform = UploadingPlatform(fail=frozenset({"upload"}))
    shown = renderer(platform)
    answer = frame("agent.text.done", {"content_index": 0, "text": "after the file"})
    for each in turn(*file_frames(b"abc", 3), answer):
        await shown.feed(each)
    await shown.close()
    assert texts(platform) == [
        "📎 notes.txt was not posted: recording refused the upload.",
        "after the file",
    ]


async def test_an_empty_file_is_a_line_not_an_upload():
    platform = UploadingPlatform()
    shown = renderer(platform)
    empty = frame(
        "agent.file",
        {
            "file_id": "f-0",
            "name": "empty.log",
            "mime_type": "text/plain",
            "size_bytes": 0,
            "data": "",
            "chunk_index": 0,
            "final": True,
        },
    )
    for each in turn(empty):
        await shown.feed(each)
    await shown.close()
    assert platform.of("upload") == []
    assert texts(platform) == ["📎 empty.log was not posted: it is empty."]


async def test_a_text_file_is_redacted_and_its_name_cut_to_a_safe_one():
    platform = UploadingPlatform()
    shown = renderer(platform, redact=True)
    data = f"token = {GITHUB}\n".encode()
    for each in turn(*file_frames(data, 8, name="../../etc/`keys`.txt")):
        await shown.feed(each)
    await shown.close()
    [(_, name, _, uploaded)] = platform.of("upload")
    assert name == "keys.txt"
    assert GITHUB not in uploaded.decode() and uploaded.startswith(b"token = ")


async def test_a_replay_after_a_restart_does_not_upload_again(tmp_path):
    store = await ConversationStore.open(tmp_path / "c.sqlite3")
    try:
        frames = turn(*file_frames(b"0123456789", 4))
        first = UploadingPlatform()
        shown = renderer(first, store)
        for each in frames:
            await shown.feed(each)
        await shown.close()
        assert len(first.of("upload")) == 1

        again = UploadingPlatform()  # a restarted gateway, replayed the same frames
        shown = renderer(again, store)
        for each in frames:
            await shown.feed(each)
        await shown.close()
        assert again.of("upload") == []
    finally:
        await store.close()


@given(st.text(max_size=300))
def test_a_safe_name_is_one_short_plain_path_component(name):
    safe = safe_name(name)
    assert safe and len(safe) <= MAX_NAME
    assert not set(safe) & {"/", "\\", "`", "\n", "\r", "\x00"}
    assert not safe.startswith(".")


@pytest.mark.parametrize(
    ("name", "safe"),
    [("plot.png", "plot.png"), ("a/b\\c.txt", "c.txt"), ("", "file"), (".env", "env")],
)
def test_safe_names(name, safe):
    assert safe_name(name) == safe


class Died(BaseException):
    """The gateway process dies here (nothing after it runs, no handler catches it)."""


class DyingUploader(UploadingPlatform):
    async def upload_file(self, conversation, name, mime_type, data):
        raise Died


async def test_a_gateway_killed_before_the_upload_uploads_it_after_its_restart(tmp_path):
    store = await ConversationStore.open(tmp_path / "c.sqlite3")
    try:
        before = frame("agent.text.done", {"content_index": 0, "text": "here it comes"})
        pieces = file_frames(b"0123456789abcdef", 5)
        frames = turn(before, *pieces)
        clock = FakeClock()  # a second between frames: the cursor is written at every chance
        first, cursor = DyingUploader(), CursorKeeper(store, "s-1", clock)
        shown = renderer(first, store)
        with pytest.raises(Died):
            for each in frames:
                await shown.feed(each)
                clock.advance(1.0)
                await cursor.rendered(each, shown.settled)
        # The cursor never passed a piece of the unfinished file: a restart replays them all.
        at = [f.message_id for f in frames].index(await store.cursor("s-1")) + 1
        assert at <= frames.index(pieces[0])

        second = UploadingPlatform()  # the restarted gateway, replayed what follows the cursor
        shown = renderer(second, store)
        for each in frames[at:]:
            await shown.feed(each)
        await shown.close()
        assert [c[3] for c in second.of("upload")] == [b"0123456789abcdef"]
        assert texts(first) + texts(second) == ["here it comes"]
    finally:
        await store.close()
