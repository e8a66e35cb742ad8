"""The master restarts under a live conversation: the gateway's link reconnects with a fresh
ticket once the master is back (it reattaches the session to its client), and the thread goes
on. Real master and client processes; the master is stopped and started again in the test."""

from __future__ import annotations

import pytest

from gateway.edge_client import EdgeClient
from gateway.platform import ConversationRef, Invocation, MessageRef
from gateway.sessions.conversations import ConversationService, ConversationSettings
from gateway.sessions.prompt import text_prompt
from gateway.storage.conversation_store import ConversationStore
from tests.edge.stack import EDGE_SECRET, start_stack
from tests.gateway.support import eventually
from tests.gateway.test_conversations import ThreadedPlatform
from tests.support import Processes, wait_for_http

USER = "carol"


@pytest.fixture
def stack(tmp_path):
    processes = Processes()
    made = None
    try:
        made = start_stack(processes, tmp_path / "stack", f"recording:{USER}")
        made.start_client()
        yield made
    finally:
        if made is not None:
            made.proxy.close()
        processes.close()


async def test_a_conversation_survives_a_master_restart(stack, tmp_path):
    edge = EdgeClient(stack.master_url, EDGE_SECRET)
    store = await ConversationStore.open(tmp_path / "conversations.sqlite3")
    platform = ThreadedPlatform()
    svc = ConversationService(edge, store, ConversationSettings(workspace_path=str(stack.root)))
    svc.bind_platform(platform)
    try:
        where = ConversationRef("recording", "c-restart")
        reply = await svc.start_session(Invocation(USER, where), "test-box", "demo")
        session_id = reply.split("`")[1]
        live = svc.live[session_id]
        thread = live.renderer.conversation

        def said(text: str) -> bool:
            return any(text in t for t in platform.texts_in(thread))

        await svc.prompt(Invocation(USER, thread, MessageRef(thread, "m1")), text_prompt("one"))
        await eventually(lambda: said('You said: "one"'), "the first answer")
        connects = live.link.connects

        master = stack.processes.procs[0]  # start_stack starts the master first
        master.terminate()
        master.wait(timeout=30)
        restarted = stack.processes.rawp(*stack.master_args, env={"RAWP_EDGE_SECRET": EDGE_SECRET})
        wait_for_http(f"{stack.master_url}/v1/edge/nodes", proc=restarted, timeout=60)

        await svc.prompt(Invocation(USER, thread, MessageRef(thread, "m2")), text_prompt("two"))
        await eventually(lambda: said('You said: "two"'), "the answer after the restart")
        assert live.link.connects > connects  # the same link, on a new socket
        assert svc.live[session_id] is live
        assert not (await store.get(thread)).ended
        await svc.end(Invocation(USER, thread))
    finally:
        await svc.close()
        await store.close()
        await edge.close()
