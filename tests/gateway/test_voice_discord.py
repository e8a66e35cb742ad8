"""Voice messages through Discord (issue 30 §6): a real master and client (the demo agent, which
answers `You said: "<its prompt>"`), the real `rawp gateway` process against the fake Discord,
and a fake OpenAI-compatible transcription service in this test.

A voice message becomes the prompt's text, and the thread shows what the agent got; typed text
stays first; a failing service is one ⚠️ line and nothing reaches the agent; a gateway with no
service configured says which setting is missing."""

from __future__ import annotations

from gateway.sessions.chat_commands import NOT_YOURS
from gateway.sessions.voice import NOT_CONFIGURED
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.transcription_server import FakeTranscription
from tests.gateway.chat_stack import (
    content,
    discord_ready,
    discord_start,
    module_stack,
    start_discord_gateway,
)

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"
OGG = b"OggS\x00\x02\x00\x00 a voice message"

stack = module_stack("voice-discord", OWNER)


class Thread:
    """The session's thread on the fake Discord: what the bot posted there, and its ✅."""

    def __init__(self, fake: FakeDiscord, thread_id: str) -> None:
        self.fake, self.id = fake, thread_id
        self.posts = f"/channels/{thread_id}/messages"

    async def posted(self, text: str):
        return await self.fake.wait_for_call(
            "POST", self.posts, where=lambda c: text in content(c), timeout=60
        )

    async def checked(self, message: dict) -> None:
        path = f"{self.posts}/{message['id']}/reactions/✅/@me"
        await self.fake.wait_for_call("PUT", path, timeout=60)

    def texts(self) -> list[str]:
        return [content(c) for c in self.fake.calls("POST", self.posts)]


async def test_a_voice_message_is_transcribed_into_the_prompt(stack, processes, tmp_path):
    async with FakeDiscord(WORLD) as fake, FakeTranscription("run the unit tests") as whisper:
        start_discord_gateway(
            processes,
            stack,
            tmp_path,
            fake,
            WORLD,
            RAWP_GATEWAY_TRANSCRIBE_URL=whisper.base_url,
            RAWP_GATEWAY_TRANSCRIBE_MODEL="tiny.en",
            RAWP_GATEWAY_TRANSCRIBE_KEY="sk-voice-4711",
        )
        await discord_ready(fake)
        _, thread_id = await discord_start(fake)
        thread = Thread(fake, thread_id)

        voice = await fake.inject_voice_message(OGG, channel_id=thread_id)
        await thread.checked(voice)
        # The transcript is the prompt, and the audio is not also attached.
        await thread.posted('You said: "run the unit tests"\n\nNo files were referenced.')
        await thread.posted("🎙️ run the unit tests")  # what the agent got, for all to see
        [heard] = whisper.requests
        assert (heard.filename, heard.content_type, heard.data) == (
            "voice-message.ogg",
            "audio/ogg",
            OGG,
        )
        assert heard.model == "tiny.en" and heard.authorization == "Bearer sk-voice-4711"

        # Typed text beside an audio file stays first; the transcript follows it.
        whisper.text = "and the lint"
        both = await fake.inject_voice_message(
            OGG, channel_id=thread_id, content="after the build:"
        )
        await thread.checked(both)
        await thread.posted('You said: "after the build:\n\nand the lint"')

        # A voice message to the bot in a DM starts a session there, transcribed.
        whisper.text = "hello from a walk"
        dm = Thread(fake, WORLD.dm_channel(WORLD.alice)["id"])
        spoken = await fake.inject_voice_message(OGG, channel_id=dm.id)
        await dm.checked(spoken)
        await dm.posted("🎙️ hello from a walk")
        await dm.posted('You said: "hello from a walk"')

        # Someone else's voice message in alice's thread is refused like their text: no note.
        whisper.text = "delete everything"
        theirs = await fake.inject_voice_message(OGG, channel_id=thread_id, author=WORLD.bob)
        await thread.posted(NOT_YOURS)
        assert not any("delete everything" in t for t in thread.texts())
        assert not fake.calls("PUT", f"{thread.posts}/{theirs['id']}/reactions/✅/@me")

        # The service fails: one ⚠️ line, nothing reaches the agent.
        whisper.status = 500
        failed = await fake.inject_voice_message(OGG, channel_id=thread_id)
        warning = await thread.posted("⚠️ the voice message could not be transcribed")
        assert "HTTP 500" in content(warning)
        assert str(warning.body["message_reference"]["message_id"]) == failed["id"]
        whisper.status = 200
        whisper.text = "the next one"
        after = await fake.inject_message("typed instead", channel_id=thread_id)
        await thread.checked(after)
        said = [t for t in thread.texts() if "You said:" in t]
        assert len(said) == 3  # the failed clip sent nothing
        assert not fake.calls("PUT", f"{thread.posts}/{failed['id']}/reactions/✅/@me")
        assert not fake.calls("PUT", f"{thread.posts}/{failed['id']}/reactions/⏳/@me")


async def test_without_a_transcription_service_the_bot_says_so(stack, processes, tmp_path):
    async with FakeDiscord(WORLD) as fake:
        start_discord_gateway(processes, stack, tmp_path, fake, WORLD)
        await discord_ready(fake)
        _, thread_id = await discord_start(fake)
        thread = Thread(fake, thread_id)

        voice = await fake.inject_voice_message(OGG, channel_id=thread_id)
        refusal = await thread.posted("⚠️ voice messages need a transcription service")
        assert content(refusal) == f"⚠️ {NOT_CONFIGURED}"
        assert "RAWP_GATEWAY_TRANSCRIBE_URL" in content(refusal)
        assert str(refusal.body["message_reference"]["message_id"]) == voice["id"]
        after = await fake.inject_message("typed", channel_id=thread_id)
        await thread.checked(after)
        said = [t for t in thread.texts() if "You said:" in t]
        assert len(said) == 1 and 'You said: "typed"' in said[0]
        assert not any(t.startswith("🎙️") for t in thread.texts())
        assert not fake.calls("GET", "/attachments/*")  # the clip was never downloaded
