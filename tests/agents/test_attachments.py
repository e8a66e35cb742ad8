"""Prompt attachments reach each agent kind the way that agent can take them (issue 16 §2).

The real `claude` CLI and the real Claude Code ACP adapter run against the fake Anthropic API,
so an image is seen where it matters: in the request the model API received. The fake ACP
agent advertises no `promptCapabilities.image`, and the fake OpenAI server records requests.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

from tests.agents.conftest import model_env
from tests.agents.fake_anthropic import FakeAnthropic, Turn, text
from tests.agents.fake_openai import FakeOpenAI, Reply, chunk
from tests.agents.wire import inline_table, of, open_session, send_prompt, write_agents_file
from tests.client.harness import recv_until, running_client
from tests.images import PDF, attachment, tiny_png

HERE = Path(__file__).parent
PNG = tiny_png()
PNG_B64 = base64.b64encode(PNG).decode()


async def prompt_with(ws, sid: str, text: str, *attachments: dict, wait: float = 90):
    await send_prompt(ws, sid, text, attachments=list(attachments))
    return await recv_until(ws, "session.turn.end", wait)


def image_blocks(request: dict) -> list[dict]:
    """The Anthropic `image` blocks of the user messages of a Messages API request."""
    return [
        block
        for message in request["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "image"
    ]


def warnings(frames: list[dict]) -> list[str]:
    return [
        p["message"]
        for p in of(frames, "agent.error")
        if p["severity"] == "warning" and p["code"] == "ATTACHMENT_NOT_DELIVERED"
    ]


async def test_an_image_reaches_the_real_claude_cli_and_the_acp_adapter(tmp_path, node_agents):
    async with FakeAnthropic() as fake:
        env = inline_table(model_env(fake.base_url, tmp_path / "home"))
        path = write_agents_file(
            tmp_path,
            '[agents.claude]\nkind = "claude-code"\n'
            f"command = [{json.dumps(str(node_agents.claude))}]\n"
            f'env = {env}\nmodel = "claude-rawp-test"\n\n'
            f'[agents.acp]\nkind = "acp"\ncommand = {json.dumps(node_agents.acp)}\nenv = {env}\n',
        )
        async with running_client(tmp_path, agents_file=path) as client:
            for agent in ("claude", "acp"):
                fake.script.append(Turn([text("A red square.")]))
                sid, ws = await open_session(client, agent)
                frames = await prompt_with(
                    ws, sid, "what is in this screenshot?", attachment("shot.png", PNG)
                )
                assert frames[-1]["payload"]["stop_reason"] == "end_turn", frames
                assert not warnings(frames)
                request = fake.main_requests()[-1]
                # The type comes from the bytes, not the octet-stream the platform declared.
                sources = [b["source"] for b in image_blocks(request)]
                assert sources == [{"type": "base64", "media_type": "image/png", "data": PNG_B64}]
                assert "what is in this screenshot?" in json.dumps(request["messages"])
                await ws.close()


def echo_transcript(tmp_path: Path) -> Path:
    turn = {"echo": True, "updates": [], "response": {"stopReason": "end_turn"}}
    path = tmp_path / "echo.json"
    path.write_text(json.dumps({"turns": [turn]}))
    return path


async def test_an_acp_agent_without_image_capability_gets_a_file_and_the_user_a_warning(
    tmp_path,
):
    command = [sys.executable, str(HERE / "fake_acp.py"), str(echo_transcript(tmp_path))]
    path = write_agents_file(
        tmp_path, f'[agents.fake]\nkind = "acp"\ncommand = {json.dumps(command)}\n'
    )
    async with running_client(tmp_path, agents_file=path) as client:
        sid, ws = await open_session(client, "fake")
        frames = await prompt_with(ws, sid, "look", attachment("shot.png", PNG, "image/png"))
        saved = ".rawp/attachments/shot.png"
        assert warnings(frames) == [
            f"shot.png was not delivered: this agent takes no images; it was saved as {saved} "
            "instead"
        ]
        # The warning comes inside the turn, before the agent's answer.
        types = [f["type"] for f in frames]
        assert types.index("agent.error") > types.index("session.turn.start")
        assert (client.workspace / saved).read_bytes() == PNG
        # What the agent got (echoed back as a thought): text and a link, no image block.
        sent = json.loads("".join(p["text"] for p in of(frames, "agent.thinking.delta")))
        assert [b["type"] for b in sent] == ["text", "resource_link"]
        assert sent[0]["text"] == f"look\n\nAttached: {saved}"
        assert sent[1]["uri"] == (client.workspace / saved).resolve().as_uri()


AGENTS = """
[agents.llm]
kind = "openai"
base_url = "{base}"
model = "vision-model"

[agents.text_only]
kind = "openai"
base_url = "{base}"
model = "text-model"
images = false
attachments_dir = "inbox"

[agents.inline]
kind = "openai"
base_url = "{base}"
model = "text-model"
files = "inline"
"""


def answer() -> list[dict]:
    return [chunk({"role": "assistant", "content": "ok"}), chunk({}, "stop")]


async def test_the_openai_kind_sends_image_url_parts_and_reports_what_it_cannot_open(tmp_path):
    async with FakeOpenAI() as fake:
        path = write_agents_file(tmp_path, AGENTS.format(base=fake.base_url))
        async with running_client(tmp_path, agents_file=path) as client:
            fake.script.extend([Reply(answer()), Reply(answer())])
            sid, ws = await open_session(client, "llm")
            frames = await prompt_with(
                ws,
                sid,
                "compare",
                attachment("a.png", PNG),
                attachment("report.pdf", PDF, "application/pdf"),
            )
            assert frames[-1]["payload"]["stop_reason"] == "end_turn"
            content = fake.requests[0]["messages"][-1]["content"]
            saved = ".rawp/attachments/report.pdf"
            assert content == [
                {"type": "text", "text": f"compare\n\nAttached: [File: {saved}]"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
            ]
            assert (client.workspace / saved).read_bytes() == PDF
            # A model that only talks cannot open the PDF: the user is told, not left guessing.
            assert warnings(frames) == [
                f"report.pdf was not delivered: this model cannot open files; it was saved as "
                f"{saved} and the model got only that path"
            ]

            # `images = false` (a text-only model): the image is a file in `attachments_dir`.
            sid, ws = await open_session(client, "text_only")
            frames = await prompt_with(ws, sid, "", attachment("a.png", PNG))
            assert fake.requests[1]["messages"][-1]["content"] == "Attached: inbox/a.png"
            assert warnings(frames) == [
                "a.png was not delivered: this agent takes no images; it was saved as "
                "inbox/a.png instead"
            ]
            assert (client.workspace / "inbox" / "a.png").read_bytes() == PNG


async def test_with_files_inline_a_text_attachment_is_inlined_and_a_binary_one_reported(
    tmp_path,
):
    async with FakeOpenAI() as fake:
        path = write_agents_file(tmp_path, AGENTS.format(base=fake.base_url))
        async with running_client(tmp_path, agents_file=path) as client:
            fake.script.append(Reply(answer()))
            sid, ws = await open_session(client, "inline")
            frames = await prompt_with(
                ws,
                sid,
                "why?",
                attachment("trace.log", "Traceback: KeyError ✗\n".encode(), "text/plain"),
                attachment("core.bin", b"\xff\xfe\x00binary"),
            )
            message = fake.requests[0]["messages"][-1]["content"]
            log, binary = ".rawp/attachments/trace.log", ".rawp/attachments/core.bin"
            assert f"[File: {log}]\n```\nTraceback: KeyError ✗\n" in message
            assert f"[File: {binary}]\n```" not in message  # named, not inlined
            assert warnings(frames) == [
                f"core.bin was not delivered: this model cannot open files; it was saved as "
                f"{binary} and the model got only that path"
            ]


@pytest.mark.parametrize("bad", ["huge", "not-base64"], ids=["huge", "not-base64"])
async def test_an_oversize_or_broken_attachment_is_refused_before_anything_runs(tmp_path, bad):
    async with FakeOpenAI() as fake:
        path = write_agents_file(tmp_path, AGENTS.format(base=fake.base_url))
        async with running_client(tmp_path, agents_file=path) as client:
            sid, ws = await open_session(client, "llm")
            item = attachment("big.pdf", b"x" * (512 * 1024 + 1))
            if bad == "not-base64":
                item = {"name": "big.pdf", "mime_type": "application/pdf", "data": "%%%"}
            await send_prompt(ws, sid, "read this", attachments=[item])
            error = (await recv_until(ws, "session.error"))[-1]["payload"]
            if bad == "huge":
                assert error["code"] == "ATTACHMENT_TOO_LARGE"
                assert "big.pdf is 524,289 bytes" in error["message"]
            else:
                assert error["code"] == "INVALID_ATTACHMENT"
            assert not fake.requests
            assert not (client.workspace / ".rawp").exists()
