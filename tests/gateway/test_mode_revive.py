"""A revived session gets the mode chosen from chat again (issue 30 §1, gateway.sessions
.conversations `_mode_again`): the gateway's store knows `plan` after a restart, `resume()`
reconnects the session and sends `control.mode.set` with its id on the new socket, and the
agent's confirming capabilities post no second "Mode: plan" line. The real `EdgeClient` and
`SessionLink` against the fake Edge API, which records what arrives on each socket."""

from __future__ import annotations

import json

from gateway.edge_client import EdgeClient
from gateway.platform import ConversationRef
from gateway.sessions.conversations import ConversationService
from gateway.storage.conversation_store import ConversationStore
from rawp.frames import dump_frame, make_frame
from tests.gateway.fake_edge_api import SECRET, FakeEdgeApi, wait_for
from tests.gateway.test_conversations import ThreadedPlatform

SID = "3f1c2a9e-7b4d-4e21-9a57-1c0d2b3e4f50"


def sent_modes(api: FakeEdgeApi) -> list[str]:
    return [
        json.loads(text)["payload"]["mode"]
        for connection in api.connections
        for text in connection.received
        if json.loads(text)["type"] == "control.mode.set"
    ]


async def test_resume_sends_the_stored_mode_again_and_shows_it_once(tmp_path):
    api = await FakeEdgeApi().start()
    api.sessions.add(SID)
    confirmed = make_frame(
        "session.capabilities",
        {"modes": [{"id": "plan", "name": "Plan"}], "current_mode": "plan"},
        session_id=SID,
    )
    api.scripts.append(([dump_frame(confirmed)], None))
    thread = ConversationRef("recording", "c1", "t1")
    store = await ConversationStore.open(tmp_path / "conversations.sqlite3")
    await store.bind(thread, subject="recording:ann", session_id=SID, node_id="n1", agent_name="a")
    await store.set_session_mode(SID, "plan")  # what the gateway before the restart stored
    edge = EdgeClient(api.url, SECRET)
    service = ConversationService(edge, store)
    platform = ThreadedPlatform()
    service.bind_platform(platform)
    try:
        assert await service.resume() == 1
        await wait_for(lambda: sent_modes(api) == ["plan"])
        live = service.live[SID]
        await wait_for(lambda: live.renderer.mode_line.shown == "plan")
        assert not [t for t in platform.texts_in(thread) if t.startswith("Mode")]
        assert await store.session_mode(SID) == "plan"
    finally:
        await service.close()
        await store.close()
        await edge.close()
        await api.close()


async def test_no_mode_chosen_sends_none(tmp_path):
    api = await FakeEdgeApi().start()
    api.sessions.add(SID)
    store = await ConversationStore.open(tmp_path / "conversations.sqlite3")
    thread = ConversationRef("recording", "c1", "t1")
    await store.bind(thread, subject="recording:ann", session_id=SID, node_id="n1", agent_name="a")
    edge = EdgeClient(api.url, SECRET)
    service = ConversationService(edge, store)
    service.bind_platform(ThreadedPlatform())
    try:
        assert await service.resume() == 1
        await wait_for(lambda: len(api.connections) == 1)
        assert sent_modes(api) == []
    finally:
        await service.close()
        await store.close()
        await edge.close()
        await api.close()
