"""The conversation layer end to end: a real master and a real client (processes, loopback,
`--dev`, the demo agent), the gateway's Edge API client and store, and a recording platform at
the chat seam. Each test uses its own threads and sessions on the module's stack."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from gateway.edge_client import EdgeClient
from gateway.platform import Choice, ConversationRef, Invocation, MessageRef, StaleChoice
from gateway.sessions.chat_commands import NO_SESSION, NOT_YOURS, SESSION_ENDED
from gateway.sessions.conversations import ConversationService, ConversationSettings
from gateway.sessions.prompt import text_prompt
from gateway.storage.conversation_store import ConversationStore
from tests.edge.stack import EDGE_SECRET, edge_for, start_stack
from tests.gateway.support import RecordingPlatform, eventually
from tests.support import Processes

ALICE = "alice"
_threads = itertools.count(1)


class ThreadedPlatform(RecordingPlatform):
    """The recording platform, with threads and the conversation of every message kept."""

    name = "recording"

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[ConversationRef, str]] = []

    async def open_thread(self, conversation, title):
        self._record("thread", title)
        if conversation.thread_id is not None:  # already in a thread: the session lives there
            return conversation
        return ConversationRef(
            conversation.platform, conversation.channel_id, f"th{next(_threads)}"
        )

    async def send_message(self, conversation, text):
        self.sent.append((conversation, text))
        return await super().send_message(conversation, text)

    def texts_in(self, conversation: ConversationRef) -> list[str]:
        return [text for where, text in self.sent if where == conversation]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    processes = Processes()
    made = None
    try:
        made = start_stack(processes, tmp_path_factory.mktemp("gw-stack"), f"recording:{ALICE}")
        made.start_client()
        yield made
    finally:
        if made is not None:
            made.proxy.close()
        processes.close()


@pytest.fixture
async def world(stack, tmp_path):
    """A service as a gateway process has it; `restart()` gives a fresh one on the same file."""
    made = []

    async def service() -> ConversationService:
        edge = EdgeClient(stack.master_url, EDGE_SECRET)
        store = await ConversationStore.open(tmp_path / "conversations.sqlite3")
        svc = ConversationService(
            edge,
            store,
            ConversationSettings(workspace_path=str(stack.root)),
            ThreadedPlatform(),
        )
        made.append(svc)
        return svc

    yield service
    for svc in made:
        await svc.close()
        await svc.store.close()
        await svc.edge.close()


def invocation(user: str, conversation: ConversationRef, message: str | None = None):
    ref = MessageRef(conversation, message) if message else None
    return Invocation(user, conversation, ref)


def channel(name: str) -> ConversationRef:
    return ConversationRef("recording", name)


async def start(svc: ConversationService, where: ConversationRef) -> ConversationRef:
    reply = await svc.start_session(invocation(ALICE, where), "test-box", "demo")
    assert reply.startswith("▶️ demo on test-box"), reply
    session_id = reply.split("`")[1]
    return svc.live[session_id].renderer.conversation


async def said(svc: ConversationService, thread: ConversationRef, text: str) -> None:
    await eventually(lambda: any(text in t for t in svc.platform.texts_in(thread)), text)


async def test_start_prompt_and_end_in_a_thread(world):
    svc = await world()
    thread = await start(svc, channel("c-start"))
    assert thread.thread_id is not None
    assert "Every message in this thread is a prompt" in svc.platform.texts_in(thread)[0]
    binding = await svc.store.get(thread)
    assert binding.subject == f"recording:{ALICE}" and binding.agent_name == "demo"

    assert await svc.prompt(invocation(ALICE, thread, "u1"), text_prompt("hello there")) is None
    await said(svc, thread, 'You said: "hello there"')
    await eventually(lambda: ("react", "u1", "✅") in svc.platform.calls, "✅ on the message")

    sessions = await svc.list_sessions(invocation(ALICE, channel("c-start")))
    assert binding.session_id in sessions
    reply = await svc.end(invocation(ALICE, thread))
    assert reply == f"Session `{binding.session_id}` ended."
    assert (await svc.store.get(thread)).ended
    assert await svc.prompt(invocation(ALICE, thread), text_prompt("again")) == SESSION_ENDED
    assert binding.session_id not in (await svc.list_sessions(invocation(ALICE, thread)))


async def test_only_the_owner_may_prompt(world):
    svc = await world()
    thread = await start(svc, channel("c-owner"))
    before = len(svc.platform.calls)
    reply = await svc.prompt(invocation("mallory", thread), text_prompt("rm -rf /"))
    assert reply == NOT_YOURS
    assert await svc.stop(invocation("mallory", thread)) == NOT_YOURS
    assert await svc.end(invocation("mallory", thread)) == NOT_YOURS
    assert len(svc.platform.calls) == before  # nothing was sent, nothing rendered
    await svc.end(invocation(ALICE, thread))


async def test_a_conversation_without_a_session_says_how_to_start_one(world):
    svc = await world()
    where = channel("c-empty")
    assert await svc.prompt(invocation(ALICE, where), text_prompt("hi")) == NO_SESSION
    assert await svc.stop(invocation(ALICE, where)) == NO_SESSION
    assert await svc.search_files(invocation(ALICE, where), "auth") == []


async def test_the_thread_finds_its_session_again_after_a_gateway_restart(world):
    first = await world()
    thread = await start(first, channel("c-restart"))
    session_id = (await first.store.get(thread)).session_id
    await first.close()  # the gateway stops; the session stays on the master
    await first.store.close()

    second = await world()
    assert await second.resume() == 1
    assert session_id in second.live
    assert await second.prompt(invocation(ALICE, thread, "u2"), text_prompt("still there?")) is None
    await said(second, thread, 'You said: "still there?"')
    await second.end(invocation(ALICE, thread))


async def test_a_session_ended_elsewhere_ends_its_conversation(world, stack):
    svc = await world()
    thread = await start(svc, channel("c-elsewhere"))
    binding = await svc.store.get(thread)
    await svc.edge.end_session(binding.subject, binding.session_id)  # another edge ended it
    await said(svc, thread, SESSION_ENDED)
    assert (await svc.store.get(thread)).ended
    assert binding.session_id not in svc.live


async def test_stop_cancels_the_running_turn(world):
    svc = await world()
    thread = await start(svc, channel("c-stop"))
    assert await svc.stop(invocation(ALICE, thread)) == "Nothing is running."
    await svc.prompt(invocation(ALICE, thread, "u3"), text_prompt("please approve this"))
    await eventually(lambda: svc.platform.of("interaction"), "the approval prompt")
    assert await svc.stop(invocation(ALICE, thread)) == "⏹ Stopping the turn."
    await eventually(lambda: ("react", "u3", "⏹") in svc.platform.calls, "⏹ on the message")
    await svc.end(invocation(ALICE, thread))


async def test_a_command_typed_in_the_channel_acts_on_the_newest_thread(world):
    svc = await world()
    where = channel("c-channel")
    thread = await start(svc, where)
    reply = await svc.end(invocation(ALICE, where))  # Slack: slash commands carry no thread
    assert reply.endswith("ended.")
    assert (await svc.store.get(thread)).ended


async def test_files_commands_and_stale_buttons_go_through_the_session(world):
    svc = await world()
    thread = await start(svc, channel("c-files"))
    found = await svc.search_files(invocation(ALICE, thread), "auth")
    assert "src/auth.py" in [c.path for c in found]
    await svc.prompt(invocation(ALICE, thread), text_prompt("hello"))
    await said(svc, thread, 'You said: "hello"')
    names = [c.name for c in await svc.agent_commands(invocation(ALICE, thread))]
    assert "review" in names
    stale = StaleChoice(invocation(ALICE, thread), "gone-interaction", Choice(ALICE, "allow"))
    assert await svc.stale_choice(stale) is None  # sent; the agent ignores an unknown id
    await svc.end(invocation(ALICE, thread))


async def test_pair_nodes_and_unknown_machines(world, stack):
    svc = await world()
    where = channel("c-pair")
    reply = await svc.pair(invocation(ALICE, where))
    assert f"rawp client pair '{stack.master_url}/v1/auth/pair?token=" in reply
    nodes = await svc.list_nodes(invocation(ALICE, where))
    assert "test-box" in nodes and ("online" in nodes or "busy" in nodes)
    unknown = await svc.start_session(invocation(ALICE, where), "no-such-box", "demo")
    assert unknown == "No machine called “no-such-box”. Yours: test-box."
    suggestions = await svc.suggest_nodes(invocation(ALICE, where), "test")
    assert [s.label.split(" (")[0] for s in suggestions] == ["test-box"]
    stranger = await svc.list_nodes(invocation("bob", where))
    assert stranger == "You have no machines yet. Pair one with the pair command."


async def test_a_refused_agent_is_reported_with_its_code(world):
    svc = await world()
    reply = await svc.start_session(invocation(ALICE, channel("c-agent")), "test-box", "nope")
    assert reply.startswith("❌") and "(" in reply
    assert not svc.live


async def test_starting_again_in_a_thread_ends_its_previous_session(world):
    svc = await world()
    thread = await start(svc, channel("c-again"))
    old = (await svc.store.get(thread)).session_id
    reply = await svc.start_session(invocation(ALICE, thread), "test-box", "demo")
    new = reply.split("`")[1]
    assert new != old and list(svc.live) == [new]
    assert (await svc.store.get(thread)).session_id == new
    open_ids = await svc.list_sessions(invocation(ALICE, thread))
    assert old not in open_ids and new in open_ids
    await svc.end(invocation(ALICE, thread))


class EagerPlatform(ThreadedPlatform):
    """A user who types in the new thread the instant it appears, before start has returned."""

    def __init__(self) -> None:
        super().__init__()
        self.service: ConversationService | None = None
        self.early: list = []

    async def open_thread(self, conversation, title):
        thread = await super().open_thread(conversation, title)
        early = invocation(ALICE, thread, "fast")
        self.early.append(asyncio.create_task(self.service.prompt(early, text_prompt("quick"))))
        await asyncio.sleep(0)  # let it run into the missing binding
        return thread


async def test_a_message_in_a_thread_still_being_opened_waits_for_its_session(world):
    svc = await world()
    eager = EagerPlatform()
    eager.service = svc
    svc.bind_platform(eager)
    reply = await svc.start_session(invocation(ALICE, channel("c-eager")), "test-box", "demo")
    thread = svc.live[reply.split("`")[1]].renderer.conversation
    assert await eager.early[0] is None  # accepted, not "No session in this conversation yet"
    await said(svc, thread, 'You said: "quick"')
    await svc.end(invocation(ALICE, thread))


class PromptAfterBind(ConversationStore):
    """The store, plus a user who types in the new thread the instant its binding is stored,
    before the start has made the session live (the window between `bind` and going live)."""

    service: ConversationService | None = None
    early: list

    async def bind(self, conversation, **fields):
        binding = await super().bind(conversation, **fields)
        prompt = self.service.prompt(invocation(ALICE, conversation, "fast"), text_prompt("quick"))
        self.early.append(asyncio.create_task(prompt))
        await asyncio.sleep(0)  # let it find the binding and try to revive the session
        return binding


async def test_a_prompt_racing_the_start_shares_its_one_live_session(world, tmp_path):
    svc = await world()
    store = await PromptAfterBind.open(tmp_path / "racing.sqlite3")
    store.service, store.early = svc, []
    await svc.store.close()
    svc.store = store
    reply = await svc.start_session(invocation(ALICE, channel("c-race")), "test-box", "demo")
    thread = svc.live[reply.split("`")[1]].renderer.conversation
    assert await store.early[0] is None
    await said(svc, thread, 'You said: "quick"')
    await eventually(lambda: ("react", "fast", "✅") in svc.platform.calls, "✅ on the message")
    # One renderer: the answer once, not once per live session made for it.
    assert sum('You said: "quick"' in t for t in svc.platform.texts_in(thread)) == 1
    await svc.end(invocation(ALICE, thread))


async def test_a_stale_button_is_on_record_whoever_pressed_it(world, stack):
    """Issue 15 §4: a press on a prompt from before a restart is recorded like any other —
    refused for a stranger, answered for the owner — in the owner's audit log on the master."""
    svc = await world()
    thread = await start(svc, channel("c-stale-audit"))
    stranger = StaleChoice(invocation("mallory", thread), "perm-9", Choice("mallory", "deny"))
    assert await svc.stale_choice(stranger) == NOT_YOURS
    owner = StaleChoice(invocation(ALICE, thread), "perm-9", Choice(ALICE, "allow"))
    assert await svc.stale_choice(owner) is None
    async with edge_for(stack.master_url, f"recording:{ALICE}") as edge:
        status, listed = await edge.call("GET", "/v1/edge/audit?limit=2")
    assert status == 200
    answered, refused = listed["records"]
    assert (refused["outcome"], refused["actor"], refused["option_id"]) == (
        "refused",
        "recording:mallory",
        "deny",
    )
    assert (answered["outcome"], answered["actor"]) == ("answered", f"recording:{ALICE}")
    assert answered["interaction_id"] == refused["interaction_id"] == "perm-9"
    await svc.end(invocation(ALICE, thread))


async def test_usage_names_the_conversations_session_for_its_owner_only(world):
    """Issue 16 §4: in the thread, or typed in its channel (Slack), the session's line; for
    anyone else, or with no session, only their own periods."""
    svc = await world()
    where = channel("c-usage")
    thread = await start(svc, where)
    session_id = (await svc.store.get(thread)).session_id
    assert await svc.prompt(invocation(ALICE, thread, "u1"), text_prompt("count me")) is None
    await said(svc, thread, 'You said: "count me"')
    in_thread = await svc.usage(invocation(ALICE, thread))
    assert f"This session (`{session_id}`, demo on test-box): " in in_thread
    assert "  • test-box: " in in_thread and "This month: " in in_thread
    in_channel = await svc.usage(invocation(ALICE, where))  # Slack: no thread in a command
    assert f"This session (`{session_id}`" in in_channel
    stranger = await svc.usage(invocation("mallory", thread))
    assert "This session" not in stranger and "test-box" not in stranger
    assert stranger.startswith("📊 **Usage**")
    elsewhere = await svc.usage(invocation(ALICE, channel("c-nothing-here")))
    assert "This session" not in elsewhere and "  • test-box: " in elsewhere


async def test_ending_a_session_takes_the_queued_marks_off(world):
    """gateway.sessions.busy rule 3: what waited will not run once the session ends."""
    svc = await world()
    thread = await start(svc, channel("c-busy-end"))
    await svc.prompt(invocation(ALICE, thread, "b1"), text_prompt("please approve this"))
    await eventually(lambda: svc.platform.of("interaction"), "the approval prompt")
    await svc.prompt(invocation(ALICE, thread, "b2"), text_prompt("queued behind it"))
    assert ("react", "b2", "🕒") in svc.platform.calls
    [(_, _, line_id)] = [c for c in svc.platform.of("send") if "queued (1)" in c[1]]
    await svc.end(invocation(ALICE, thread))
    assert ("unreact", "b2", "🕒") in svc.platform.calls
    assert ("delete", line_id) in svc.platform.calls
