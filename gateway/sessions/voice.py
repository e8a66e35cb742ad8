"""Voice messages in (issue 30 §6): an audio clip becomes the prompt's text, via a transcription
service the operator runs.

- The service speaks OpenAI's `POST {base}/v1/audio/transcriptions` (multipart `file` and
  `model`, answer `{"text": …}`), as local whisper servers do (speaches, formerly
  faster-whisper-server; LocalAI; vLLM). Its base URL, model, optional API key and timeout are
  gateway settings (gateway.settings, `transcribe_*`); the key goes into the Authorization
  header only, never into a log line, an error or a repr.
- Without a base URL, a voice message is refused with `NOT_CONFIGURED` before anything is
  downloaded, and nothing is sent to the agent. Every failure of the service (an HTTP error, no
  answer in time, an answer without text, no speech heard) is one `VoiceError`, a `PromptError`:
  the adapters already answer those with "⚠️ …" and send nothing — never a traceback.
- The adapters stay thin: they say which attachments are audio (`is_audio`), hand each as a
  `Clip` whose bytes are fetched only once the service is known to be there, and post
  `transcript_note` once the prompt is taken, so the person sees what the agent got. Text
  typed beside the clip stays first, the transcript after it (`add_transcript`); the audio is
  not also attached.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated

import aiohttp
import yarl
from pydantic import AfterValidator, Field, SecretStr

from gateway.sessions.prompt import PromptDraft, PromptError
from runtime.settings import Accepts, SettingGroup, setting

log = logging.getLogger(__name__)

URL_SETTING = "RAWP_GATEWAY_TRANSCRIBE_URL"
DEFAULT_MODEL = "whisper-1"
DEFAULT_TIMEOUT_S = 60.0
# OpenAI's own limit on one file; a voice message is far smaller (Discord: ~1 MB a minute).
MAX_AUDIO_BYTES = 25 * 1024 * 1024
# What the note shows at most: a Discord message holds 2,000 characters.
NOTE_LIMIT = 1900
PATH = "/v1/audio/transcriptions"

NOT_CONFIGURED = (
    "voice messages need a transcription service, and this gateway has none: its operator "
    f"sets {URL_SETTING} to an OpenAI-compatible /v1/audio/transcriptions endpoint (a local "
    "whisper server speaks it). Nothing was sent to the agent; type the prompt instead."
)


class VoiceError(PromptError):
    """A clip that could not become text; the message is for the person who sent it."""


@dataclass(frozen=True)
class Clip:
    """One audio attachment: its name, type and size as the platform states them, and how to
    fetch its bytes (called only once the service is known to be configured)."""

    name: str
    mime_type: str
    size: int
    fetch: Callable[[], Awaitable[bytes]]


def is_audio(mime_type: str | None, slack_subtype: str | None = None) -> bool:
    """An audio attachment: any `audio/*` type (a Discord voice message is `audio/ogg`), or a
    Slack clip (`slack_audio`, whose type may read `video/webm`)."""
    kind = (mime_type or "").split(";", 1)[0].strip().lower()
    return kind.startswith("audio/") or slack_subtype == "slack_audio"


def endpoint(base_url: str) -> str:
    """`{base}/v1/audio/transcriptions`; a base that already ends in `/v1` (as OpenAI's is
    usually written) or in the whole path is taken as it is."""
    base = base_url.rstrip("/")
    if base.endswith(PATH):
        return base
    if base.endswith("/v1"):
        return base + PATH.removeprefix("/v1")
    return base + PATH


def check_url(value: str | None) -> str | None:
    """The setting's check: an http(s) URL with a host (said at start-up, not at the first clip)."""
    if value is not None:
        parsed = yarl.URL(value)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError("must be an http:// or https:// URL, e.g. http://127.0.0.1:8000")
    return value


TranscribeUrl = Annotated[
    str | None, AfterValidator(check_url), Accepts("an http:// or https:// URL")
]
TranscribeTimeout = Annotated[
    float, Field(gt=0, le=600), Accepts("a number of seconds above 0, at most 600")
]


class VoiceSettings(SettingGroup):
    """Where clips are transcribed: the group `voice` of `rawp gateway`'s and `rawp up`'s
    settings (one declaration for both), taken by `Transcriber` as it is. No URL: voice
    messages are refused (NOT_CONFIGURED)."""

    url: TranscribeUrl = setting(
        None,
        env="RAWP_GATEWAY_TRANSCRIBE_URL",  # URL_SETTING, spelt out for the settings checks
        flag="--transcribe-url",
        help="base URL of an OpenAI-compatible transcription service (POST "
        "/v1/audio/transcriptions; local whisper servers speak it): Discord voice messages, "
        "Slack audio clips and the web edge's microphone become prompts; none: they are "
        "refused with a note saying so (the web page shows no microphone)",
        example="http://127.0.0.1:8000",
    )
    model: str = setting(
        DEFAULT_MODEL,
        env="RAWP_GATEWAY_TRANSCRIBE_MODEL",
        flag="--transcribe-model",
        help="the `model` sent with each clip (what the transcription service calls its model)",
    )
    key: SecretStr | None = setting(
        None,
        env="RAWP_GATEWAY_TRANSCRIBE_KEY",
        help="API key of the transcription service, sent as a Bearer token and never logged; "
        "none: no Authorization header (a local server); read from the environment only",
    )
    timeout: TranscribeTimeout = setting(
        DEFAULT_TIMEOUT_S,
        env="RAWP_GATEWAY_TRANSCRIBE_TIMEOUT",
        flag="--transcribe-timeout",
        help="seconds one clip may take to transcribe; then the person is told and nothing is sent",
    )


class Transcriber:
    """The client of one transcription service; a new HTTP session per clip (clips are rare,
    and nothing is left open between them)."""

    def __init__(self, settings: VoiceSettings | None = None) -> None:
        self.config = settings or VoiceSettings()

    @property
    def configured(self) -> bool:
        return bool(self.config.url)

    def _where(self) -> str:
        """The service as named in messages and logs: its host, never a password in the URL."""
        parsed = yarl.URL(self.config.url or "")
        return f"{parsed.host}:{parsed.port}" if parsed.port else str(parsed.host)

    async def transcribe_all(self, clips: Sequence[Clip]) -> str:
        """The clips' transcripts in order, one paragraph each; VoiceError if any fails."""
        if not self.configured:
            raise VoiceError(NOT_CONFIGURED)
        for clip in clips:  # every size before any download
            if clip.size > MAX_AUDIO_BYTES:
                raise VoiceError(
                    f"{clip.name} is {clip.size:,} bytes; a voice message may be at most "
                    f"{MAX_AUDIO_BYTES:,} bytes to be transcribed. Nothing was sent to the agent."
                )
        texts = []
        for clip in clips:
            texts.append(await self.transcribe(clip.name, clip.mime_type, await clip.fetch()))
        return "\n\n".join(texts)

    async def transcribe(self, name: str, mime_type: str, data: bytes) -> str:
        """The text the service heard in `data`; VoiceError when there is none."""
        if not self.config.url:
            raise VoiceError(NOT_CONFIGURED)
        form = aiohttp.FormData()
        form.add_field("file", data, filename=name, content_type=mime_type)
        form.add_field("model", self.config.model)
        form.add_field("response_format", "json")
        key = self.config.key.get_secret_value() if self.config.key else None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        timeout = aiohttp.ClientTimeout(total=self.config.timeout)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.post(endpoint(self.config.url), data=form, headers=headers) as answer,
            ):
                status, raw = answer.status, await answer.read()
        except TimeoutError:
            raise self._failed(f"did not answer within {self.config.timeout:g} s") from None
        except aiohttp.ClientError as exc:
            raise self._failed(f"could not be reached ({type(exc).__name__})") from None
        if status != 200:
            raise self._failed(f"answered HTTP {status}")
        try:
            body = json.loads(raw)
        except ValueError:
            raise self._failed("answered with something other than JSON") from None
        text = body.get("text") if isinstance(body, dict) else None
        if not isinstance(text, str):
            raise self._failed("answered without a transcript")
        if not text.strip():
            raise VoiceError(
                f"no speech was heard in {name}. Nothing was sent to the agent; "
                "try again or type the prompt."
            )
        return text.strip()

    def _failed(self, what: str) -> VoiceError:
        """One line for the log (no key, no URL path or password) and one for the person."""
        log.warning("voice: the transcription service at %s %s", self._where(), what)
        return VoiceError(
            f"the voice message could not be transcribed: the transcription service {what}. "
            "Nothing was sent to the agent; try again or type the prompt."
        )


def add_transcript(draft: PromptDraft, typed: str, transcript: str) -> None:
    """The typed text (already in `draft`) stays first; the transcript follows it, escaped as
    typed text is (it is the person's words)."""
    draft.add_text(f"\n\n{transcript}" if typed.strip() else transcript)


def transcript_note(transcript: str) -> str:
    """What the thread shows: the words the agent got, cut to fit one chat message."""
    if len(transcript) > NOTE_LIMIT:
        transcript = transcript[: NOTE_LIMIT - 1].rstrip() + "…"
    return f"🎙️ {transcript}"
