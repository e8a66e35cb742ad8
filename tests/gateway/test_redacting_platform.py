"""Redaction at the renderer's platform seam (gateway.redaction.redacting_platform, render rule 9):
what a session posts, edits, shows as status or asks in an approval is redacted; a key longer than a
message is never cut in two; a node named in `unredacted_nodes` is shown as is; the `.env`
fingerprints arrive in `session.capabilities`."""

from __future__ import annotations

from gateway.platform import ConversationRef, MessageRef
from gateway.redaction.redact import marker
from gateway.rendering.render import RenderOptions, SessionRenderer
from rawp.fingerprints import fingerprints, new_salt
from tests.gateway.support import Recorder, RecordingPlatform, frame, settle

CONV = ConversationRef("recording", "chan", "thread")
GITHUB = "ghp_Q7wE9rT2yU4iO6pA8sD0fG1hJ3kL5zX7cV9b"
AWS = "AKIAZ7Q3N5V2KX4TRW8M"
LINE = "MIIEpAIBAAKCAQEAz8Xq3Lw9Yk2Vb7Nc1Rt5Hs0Jd4Fg6Mp8Qa2Ue9Wi3Oy7Tr1Ex"
# A 4096-bit key's worth of lines: longer than one Discord message.
PEM = "\n".join(
    [
        "-----BEGIN PRIVATE KEY-----",
        *(LINE[i:] + LINE[:i] for i in range(50)),
        "-----END PRIVATE KEY-----",
    ]
)


def renderer(platform: RecordingPlatform, **options) -> SessionRenderer:
    r = SessionRenderer(
        platform, CONV, "sess-1", send_frame=Recorder(), options=RenderOptions(**options)
    )
    r.expect_prompt("p1", MessageRef(CONV, "m"), "alice")
    return r


def start():
    return frame("session.turn.start", {"turn_id": "turn-1", "prompt_message_id": "p1"})


def everything(platform: RecordingPlatform) -> str:
    return "\n".join(repr(call) for call in platform.calls)


async def test_a_key_longer_than_a_message_is_redacted_whole_and_chunks_stay_in_the_limit():
    platform = RecordingPlatform()
    r = renderer(platform)
    text = "Here it is:\n```\n" + PEM + "\n```\nand " + GITHUB
    assert len(PEM) > platform.limits.max_message_length
    await r.feed(start())
    await r.feed(frame("agent.text.done", {"content_index": 0, "text": text}))
    sent = [c[1] for c in platform.of("send")]
    assert all(len(s) <= platform.limits.max_message_length for s in sent)
    joined = "\n".join(sent)
    assert marker("private key") in joined and marker("GitHub token") in joined
    for i in range(50):
        assert (LINE[i:] + LINE[:i]) not in joined
    assert GITHUB not in joined
    await r.close()


async def test_deltas_that_cut_a_token_in_two_are_joined_before_redaction():
    platform = RecordingPlatform()
    r = renderer(platform)
    await r.feed(start())
    for part in ("token: " + GITHUB[:10], GITHUB[10:25], GITHUB[25:] + " done"):
        await r.feed(frame("agent.text.delta", {"content_index": 0, "text": part}))
    await r.feed(frame("session.turn.end", {"turn_id": "turn-1", "stop_reason": "end_turn"}))
    await settle()
    assert GITHUB not in everything(platform)
    assert marker("GitHub token") in everything(platform)
    await r.close()


async def test_status_lines_tool_lines_errors_and_approval_prompts_are_redacted():
    platform = RecordingPlatform()
    # The status line at once (gateway.rendering.status_line).
    r = renderer(platform, status_every_s=0.0)
    await r.feed(start())
    command = f"curl -H 'Authorization: Bearer {GITHUB}' https://api.github.com"
    await r.feed(
        frame(
            "tool.invoke.request",
            {"invocation_id": "t1", "tool_name": "Bash", "input": {"command": command}},
        )
    )
    await r.feed(
        frame(
            "agent.interaction.request",
            {
                "interaction_id": "i1",
                "kind": "approval",
                "prompt": f"Run `{command}` with {AWS}?",
                "options": [{"option_id": "allow", "label": f"Allow {AWS}"}],
            },
        )
    )
    await r.feed(
        frame("agent.error", {"code": "E", "severity": "warning", "message": f"bad key {AWS}"})
    )
    await settle()
    seen = everything(platform)
    assert GITHUB not in seen and AWS not in seen
    assert platform.of("interaction") and platform.of("status")
    await r.close()


async def test_dotenv_values_known_by_the_capabilities_fingerprints():
    platform = RecordingPlatform()
    r = renderer(platform)
    value = "tq84-Lmv0-Zr2x-Wa71"
    salt = new_salt()
    lengths, hashes = fingerprints([value], salt)
    caps = {"secret_fingerprints": {"salt": salt, "lengths": lengths, "hashes": hashes}}
    await r.feed(frame("session.capabilities", caps, turn_id=None))
    await r.feed(start())
    await r.feed(frame("agent.text.done", {"content_index": 0, "text": f"DB_PASSWORD={value}"}))
    assert [c[1] for c in platform.of("send")] == [f"DB_PASSWORD={marker('.env value')}"]
    await r.close()


async def test_an_exempt_node_is_shown_as_is_and_others_are_not():
    options = RenderOptions(unredacted_nodes=frozenset({"node-a"}))
    assert options.for_node("node-a").redact is False
    assert options.for_node("node-b").redact is True
    assert RenderOptions(redact=False).for_node("node-b").redact is False

    platform = RecordingPlatform()
    r = renderer(platform, redact=False)
    await r.feed(start())
    await r.feed(frame("agent.text.done", {"content_index": 0, "text": f"key {AWS}"}))
    assert [c[1] for c in platform.of("send")] == [f"key {AWS}"]
    await r.close()
