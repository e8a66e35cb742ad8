"""The transcription client of voice messages (gateway.sessions.voice, issue 30 §6) against a fake
OpenAI-compatible `/v1/audio/transcriptions` on loopback: what it sends, and that every failure
is one `VoiceError` for the person — never a traceback, never the API key."""

from __future__ import annotations

import logging

import pytest

from gateway.sessions.prompt import PromptDraft, PromptError
from gateway.sessions.voice import (
    MAX_AUDIO_BYTES,
    NOT_CONFIGURED,
    NOTE_LIMIT,
    Clip,
    Transcriber,
    VoiceError,
    VoiceSettings,
    add_transcript,
    endpoint,
    is_audio,
    transcript_note,
)
from gateway.settings import GatewaySettings
from runtime.settings import SettingError
from tests.fakes.transcription_server import FakeTranscription
from tests.support import free_port

KEY = "sk-voice-secret-4711"
OGG = b"OggS\x00\x02fake voice"


def clip(data: bytes = OGG, size: int | None = None, fetched: list | None = None) -> Clip:
    async def fetch() -> bytes:
        if fetched is not None:
            fetched.append(True)
        return data

    return Clip("voice-message.ogg", "audio/ogg", len(data) if size is None else size, fetch)


async def test_a_clip_is_sent_as_multipart_and_its_text_comes_back():
    async with FakeTranscription(text="  fix the failing test \n") as whisper:
        config = VoiceSettings(url=whisper.base_url + "/", model="small.en", key=KEY)
        heard = await Transcriber(config).transcribe_all([clip()])
    assert heard == "fix the failing test"
    [sent] = whisper.requests
    assert (sent.filename, sent.content_type, sent.data) == ("voice-message.ogg", "audio/ogg", OGG)
    assert sent.model == "small.en"
    assert sent.fields["response_format"] == "json"
    assert sent.authorization == f"Bearer {KEY}"


async def test_without_a_key_no_authorization_is_sent_and_clips_are_joined_in_order():
    async with FakeTranscription(text="one") as whisper:
        transcriber = Transcriber(VoiceSettings(url=whisper.base_url))
        first = await transcriber.transcribe_all([clip()])
        whisper.text = "two"
        second = await transcriber.transcribe("b.ogg", "audio/ogg", OGG)
    assert (first, second) == ("one", "two")
    assert [r.authorization for r in whisper.requests] == [None, None]


def test_the_endpoint_is_the_openai_path_under_the_base():
    path = "/v1/audio/transcriptions"
    assert endpoint("http://127.0.0.1:8000") == "http://127.0.0.1:8000" + path
    assert endpoint("https://api.openai.com/v1/") == "https://api.openai.com" + path
    assert endpoint("http://h/whisper" + path) == "http://h/whisper" + path


async def test_an_http_error_is_one_message_and_names_the_status(caplog):
    async with FakeTranscription(status=500) as whisper:
        transcriber = Transcriber(VoiceSettings(url=whisper.base_url, key=KEY))
        with pytest.raises(VoiceError) as failed:
            await transcriber.transcribe_all([clip()])
    assert isinstance(failed.value, PromptError)  # the adapters answer these with ⚠️
    assert "the transcription service answered HTTP 500" in str(failed.value)
    assert "Nothing was sent to the agent" in str(failed.value)
    assert "HTTP 500" in caplog.text


async def test_a_service_that_does_not_answer_in_time_is_a_timeout_message():
    async with FakeTranscription(text="late", delay_s=5) as whisper:
        transcriber = Transcriber(VoiceSettings(url=whisper.base_url, timeout=0.3))
        with pytest.raises(VoiceError, match=r"did not answer within 0\.3 s"):
            await transcriber.transcribe_all([clip()])


async def test_a_service_that_is_not_there_is_a_message():
    transcriber = Transcriber(VoiceSettings(url=f"http://127.0.0.1:{free_port()}"))
    with pytest.raises(VoiceError, match="could not be reached"):
        await transcriber.transcribe_all([clip()])


async def test_empty_text_is_no_speech_heard():
    async with FakeTranscription(text="   ") as whisper:
        transcriber = Transcriber(VoiceSettings(url=whisper.base_url))
        with pytest.raises(VoiceError, match=r"no speech was heard in voice-message\.ogg"):
            await transcriber.transcribe_all([clip()])


async def test_without_a_service_it_says_which_setting_and_downloads_nothing():
    fetched: list = []
    with pytest.raises(VoiceError) as refused:
        await Transcriber().transcribe_all([clip(fetched=fetched)])
    assert str(refused.value) == NOT_CONFIGURED
    assert "RAWP_GATEWAY_TRANSCRIBE_URL" in NOT_CONFIGURED
    assert fetched == []


async def test_a_clip_too_large_is_refused_before_it_is_downloaded():
    fetched: list = []
    transcriber = Transcriber(VoiceSettings(url="http://127.0.0.1:9"))
    with pytest.raises(VoiceError, match="may be at most"):
        await transcriber.transcribe_all([clip(size=MAX_AUDIO_BYTES + 1, fetched=fetched)])
    assert fetched == []


async def test_the_key_is_in_no_log_line_no_error_and_no_repr(caplog):
    caplog.set_level(logging.DEBUG)
    config = VoiceSettings(url="http://127.0.0.1:1", key=KEY)
    errors = []
    async with FakeTranscription(text="fine") as whisper:
        ok = VoiceSettings(url=whisper.base_url, key=KEY)
        assert await Transcriber(ok).transcribe_all([clip()]) == "fine"
        for whisper.status, whisper.text in ((500, "x"), (200, "")):
            with pytest.raises(VoiceError) as failed:
                await Transcriber(ok).transcribe_all([clip()])
            errors.append(str(failed.value))
    with pytest.raises(VoiceError) as unreachable:
        await Transcriber(config).transcribe_all([clip()])
    errors.append(str(unreachable.value))
    assert KEY not in caplog.text
    assert all(KEY not in e for e in errors)
    assert KEY not in repr(config) and KEY not in repr(Transcriber(config).config)


def test_the_setting_is_checked_and_the_key_kept_secret():
    environ = {
        "RAWP_GATEWAY_TRANSCRIBE_URL": "http://127.0.0.1:8000",
        "RAWP_GATEWAY_TRANSCRIBE_KEY": KEY,
    }
    settings = GatewaySettings.from_environment(environ=environ)
    assert settings.voice.url == "http://127.0.0.1:8000"
    assert settings.voice.key.get_secret_value() == KEY and KEY not in repr(settings)
    with pytest.raises(SettingError, match="RAWP_GATEWAY_TRANSCRIBE_URL"):
        GatewaySettings.from_environment(environ={"RAWP_GATEWAY_TRANSCRIBE_URL": "ftp://h"})


def test_audio_is_any_audio_type_or_a_slack_clip():
    assert is_audio("audio/ogg") and is_audio("Audio/WebM; codecs=opus")
    assert is_audio("video/webm", "slack_audio")
    assert not is_audio("image/png") and not is_audio(None) and not is_audio("video/mp4")


def test_typed_text_stays_first_and_the_note_fits_a_message():
    draft = PromptDraft()
    draft.add_text("about the build:")
    add_transcript(draft, "about the build:", "it fails on main")
    assert draft.build().prompt_text == "about the build:\n\nit fails on main"
    alone = PromptDraft()
    alone.add_text("")
    add_transcript(alone, "", "hello")
    assert alone.build().prompt_text == "hello"
    assert transcript_note("hello") == "🎙️ hello"
    long = transcript_note("word " * 1000)
    assert len(long) <= NOTE_LIMIT + 3 and long.endswith("…")
