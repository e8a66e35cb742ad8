"""`rawp up` with a Slack token in the environment serves Slack instead of the console: the
machine is paired for RAWP_UP_OWNER, and a session started from Slack runs a turn. Slack is the
fake Slack (SLACK_API_BASE_URL), reached in HTTP mode with signed requests."""

from __future__ import annotations

import json
import socket

from tests.fakes.slack_payloads import SlackWorld
from tests.fakes.slack_server import FakeSlack
from tests.fakes.transcription_server import FakeTranscription
from tests.support import free_port, wait_for_http


def text_of(call) -> str:
    return str(call.body.get("text") or "")


async def test_rawp_up_serves_slack_when_its_token_is_set(processes, tmp_path):
    world = SlackWorld()
    async with FakeSlack(world) as slack, FakeTranscription("and a clip") as whisper:
        port = free_port()
        workspace = tmp_path / "project"
        workspace.mkdir()
        env = {
            "SLACK_BOT_TOKEN": world.bot_token,
            "SLACK_MODE": "http",
            "SLACK_SIGNING_SECRET": world.signing_secret,
            "SLACK_API_BASE_URL": slack.api_base_url,
            "SLACK_HTTP_HOST": "127.0.0.1",
            "SLACK_HTTP_PORT": str(port),
            "DISCORD_BOT_TOKEN": "",
            "RAWP_PLATFORM": "",
            "RAWP_UP_OWNER": f"slack:{world.team_id}:{world.alice['id']}",
            "RAWP_GATEWAY_TRANSCRIBE_URL": whisper.base_url,  # voice messages in (issue 30 §6)
        }
        up = processes.rawp("up", "--state-dir", str(tmp_path / "state"), env=env, cwd=workspace)
        bolt = f"http://127.0.0.1:{port}/slack/events"
        wait_for_http(bolt, proc=up, timeout=60)

        device = "-".join(socket.gethostname().split())
        await slack.post_slash_command_to(bolt, world.slash_command("/rawp", "nodes"))
        listing = await slack.log.wait_for_call("POST", "/response-url/*", 30)
        assert device in json.dumps(listing.body, ensure_ascii=False)

        await slack.post_slash_command_to(
            bolt, world.slash_command("/rawp", f"start {device} demo")
        )
        parent = await slack.wait_for_call(
            "chat.postMessage", where=lambda c: text_of(c).startswith("🧵"), timeout=60
        )
        event = world.message_event("hello from slack", thread_ts=parent.response["ts"])
        await slack.post_event_to(bolt, event)
        await slack.wait_for_call(
            "chat.postMessage",
            where=lambda c: 'You said: "hello from slack"' in text_of(c),
            timeout=60,
        )
        # `rawp up` passes the transcription service on: an audio clip becomes the prompt.
        audio = slack.add_file("audio_message.webm", b"\x1aE\xdf\xa3 clip", "audio/webm")
        clip = world.message_event("", thread_ts=parent.response["ts"], files=[audio])
        await slack.post_event_to(bolt, clip)
        await slack.wait_for_call(
            "chat.postMessage", where=lambda c: 'You said: "and a clip"' in text_of(c), timeout=60
        )
        assert [r.filename for r in whisper.requests] == ["audio_message.webm"]
        up.terminate()
        assert up.wait(timeout=60) == 0


def test_rawp_up_with_a_platform_token_but_no_owner_says_what_to_set(processes, tmp_path):
    env = {"SLACK_BOT_TOKEN": "xoxb-set", "RAWP_UP_OWNER": "", "RAWP_PLATFORM": ""}
    up = processes.rawp("up", "--state-dir", str(tmp_path / "state"), env=env, cwd=tmp_path)
    out, _ = up.communicate(timeout=60)
    assert up.returncode == 2
    assert b"RAWP_UP_OWNER" in out and b"Traceback" not in out
