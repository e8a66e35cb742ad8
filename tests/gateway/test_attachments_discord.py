"""An image attached to a message in a Discord session thread reaches the agent (issue 16 §2).

Everything real but the ends: the fake Discord driven by discord.py in the `rawp gateway`
process, a real master and client, and the client's `openai` agent talking to the fake
OpenAI server in this test. The image arrives as an `image_url` part; a PDF that the model
cannot open lands in the workspace, and the thread gets the ⚠️ line that says so.
"""

from __future__ import annotations

import base64

import pytest

from tests.agents.fake_openai import FakeOpenAI, Reply, chunk
from tests.edge.stack import start_stack
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import content, discord_ready, discord_start, start_discord_gateway
from tests.images import PDF, tiny_png
from tests.support import Processes

WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"


@pytest.fixture
def stack_and_model(tmp_path):
    model = FakeOpenAI()  # its port is chosen now; it serves once the test enters it
    agents = tmp_path / "agents.toml"
    agents.write_text(
        f'[agents.vision]\nkind = "openai"\nbase_url = "{model.base_url}"\nmodel = "v"\n'
    )
    processes = Processes()
    stack = None
    try:
        stack = start_stack(processes, tmp_path, OWNER)
        stack.start_client("--agents-file", str(agents))
        yield stack, model
    finally:
        if stack is not None:
            stack.proxy.close()
        processes.close()


async def test_an_image_in_a_thread_reaches_the_model_and_a_pdf_is_reported(
    stack_and_model, processes, tmp_path
):
    stack, model = stack_and_model
    model.script.append(
        Reply([chunk({"role": "assistant", "content": "A red square."}), chunk({}, "stop")])
    )
    async with model, FakeDiscord(WORLD) as discord_fake:
        start_discord_gateway(processes, stack, tmp_path, discord_fake, WORLD)
        await discord_ready(discord_fake)
        _, thread_id = await discord_start(discord_fake, "vision")

        png = tiny_png()
        prompt = await discord_fake.inject_message(
            "what is wrong here?",
            channel_id=thread_id,
            attachments={"screenshot.png": png, "spec.pdf": PDF},
        )
        await discord_fake.wait_for_call(
            "PUT", f"/channels/{thread_id}/messages/{prompt['id']}/reactions/✅/@me", timeout=60
        )
        parts = model.requests[0]["messages"][-1]["content"]
        url = "data:image/png;base64," + base64.b64encode(png).decode()
        assert {"type": "image_url", "image_url": {"url": url}} in parts
        assert parts[0]["text"].startswith("what is wrong here?\n\nAttached: [File: ")

        texts = [content(c) for c in discord_fake.calls("POST", f"/channels/{thread_id}/messages")]
        warning = next(t for t in texts if t.startswith("⚠️"))
        assert "spec.pdf was not delivered: this model cannot open files" in warning
        assert any("A red square." in t for t in texts)
        saved = stack.root / ".rawp" / "attachments" / "spec.pdf"
        assert saved.read_bytes() == PDF
