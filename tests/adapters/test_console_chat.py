"""The console chat loop against a scripted agent at the frame link (a fake at the wire)."""

from __future__ import annotations

import asyncio
import io

from adapters.console import ConsoleComposer, ConsolePlatform, LineReader
from adapters.console.chat import run_chat
from gateway.rendering.render import SessionRenderer
from gateway.sessions.session import ChatSession
from rawp.clock import new_id
from rawp.frames import Frame, dump_frame, parse_frame
from tests.gateway.fixtures.build import SESSION
from tests.gateway.support import load_fixture


class ScriptedAgent:
    """Answers each prompt with a recorded turn, re-stamped as new frames; waits for the
    answer to each interaction request before going on, as an agent would."""

    def __init__(self, *turns: list[Frame]) -> None:
        self.received: list[Frame] = []
        self._turns = list(turns)
        self._inbox: asyncio.Queue[Frame | None] = asyncio.Queue()
        self._answers: asyncio.Queue[Frame] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []

    async def send(self, frame: Frame) -> None:
        frame = parse_frame(dump_frame(frame))  # only what survives the wire
        self.received.append(frame)
        if frame.type == "control.prompt.request":
            self._tasks.append(asyncio.create_task(self._play(frame)))
        elif frame.type == "control.interaction.response":
            await self._answers.put(frame)

    async def receive(self) -> Frame | None:
        return await self._inbox.get()

    async def _play(self, prompt: Frame) -> None:
        if not self._turns:
            await self._inbox.put(None)
            return
        for recorded in self._turns.pop(0):
            frame = recorded.model_copy(update={"message_id": new_id()})
            if frame.type == "session.turn.start":
                payload = frame.payload.model_copy(update={"prompt_message_id": prompt.message_id})
                frame = frame.model_copy(update={"payload": payload})
            await self._inbox.put(frame)
            if frame.type == "agent.interaction.request":
                await self._answers.get()


async def test_a_console_conversation_with_an_approval_end_to_end():
    out = io.StringIO()
    lines = LineReader(io.StringIO("find the bug <@me>\n\nrun the tests\n1\n"))
    platform = ConsolePlatform(out, lines)
    agent = ScriptedAgent(load_fixture("thinking_turn.jsonl"), load_fixture("approval.jsonl"))
    renderer = SessionRenderer(platform, platform.conversation, SESSION, send_frame=agent.send)
    session = ChatSession(renderer, agent)
    sent = await run_chat(platform, ConsoleComposer(platform, lines), session)

    assert sent == 2
    prompts = [f for f in agent.received if f.type == "control.prompt.request"]
    assert [p.payload.prompt_text for p in prompts] == [r"find the bug \<@me>", "run the tests"]
    assert all(p.session_id == SESSION for p in prompts)
    answers = [f for f in agent.received if f.type == "control.interaction.response"]
    assert [a.payload.option_id for a in answers] == ["allow"]
    transcript = out.getvalue()
    # the first answer is rendered, with ✅, before the second prompt's approval is asked
    first = transcript.index("The bug is in `verify()`: it never checks expiry.\n✅ done")
    assert first < transcript.index("❓ Run `npm test`?")
    assert transcript.rstrip().endswith("All tests pass.\n✅ done")
    users = [m for m in platform.messages.values() if m.author == platform.user_id]
    assert [m.reactions for m in users] == [["✅"], ["✅"]]


async def test_the_loop_ends_when_the_link_closes():
    out = io.StringIO()
    lines = LineReader(io.StringIO("hello\nnever sent\n"))
    platform = ConsolePlatform(out, lines)
    agent = ScriptedAgent()  # no turns: it closes the link on the first prompt
    renderer = SessionRenderer(platform, platform.conversation, SESSION, send_frame=agent.send)
    assert (
        await run_chat(platform, ConsoleComposer(platform, lines), ChatSession(renderer, agent))
        == 1
    )
