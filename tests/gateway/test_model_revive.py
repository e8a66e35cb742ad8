"""A revived session gets the model chosen from chat again (issue 30 §1,
gateway.sessions.model_command `model_again`): the gateway's store knows `opus` after a
restart, `resume()` reconnects the session and sends `control.model.set` on the new socket, and
the agent's confirming capabilities post no second "Model: opus" line. The real `EdgeClient`
and `SessionLink` against the fake Edge API, which records what arrives on each socket."""

from __future__ import annotations

import json

from gateway.edge_client import EdgeClient
from gateway.platform import ConversationRef
from gateway.sessions.conversations import ConversationService
from gateway.storage.conversation_store import ConversationStore
from rawp.frames import dump_frame, make_frame
from tests.gateway.fake_edge_api import SECRET, FakeEdgeApi, wait_for
from tests.gateway.test_conversations import ThreadedPlatform

SID = "3f1c2a9e-7b4d-4e21-9a57-1c0d2b3e4f51"
OFFERED = [{"id": "sonnet", "name": "sonnet"}, {"id": "opus", "name": "opus"}]


def sent_models(api: FakeEdgeApi) -> list[str]:
    return [
        json.loads(text)["payload"]["model"]
        for connection in api.connections
        for text in connection.received
        if json.loads(text)["type"] == "control.model.set"
    ]


async def revived(tmp_path, chosen: str | None):
    api = await FakeEdgeApi().start()
    api.sessions.add(SID)
    confirmed = make_frame(
        "session.capabilities", {"models": OFFERED, "current_model": "opus"}, session_id=SID
    )
    api.scripts.append(([dump_frame(confirmed)], None))
    thread = ConversationRef("recording", "c1", "t1")
    store = await ConversationStore.open(tmp_path / "conversations.sqlite3")
    await store.bind(thread, subject="recording:ann", session_id=SID, node_id="n1", agent_name="a")
    # What the gateway before the restart stored.
    await store.note_models(SID, ["sonnet", "opus"], chosen or "sonnet")
    if chosen is not None:
        await store.choose_model(SID, chosen)
    edge = EdgeClient(api.url, SECRET)
    service = ConversationService(edge, store)
    platform = ThreadedPlatform()
    service.bind_platform(platform)
    return api, store, edge, service, platform, thread


async def test_resume_sends_the_stored_model_again_and_shows_it_once(tmp_path):
    api, store, edge, service, platform, thread = await revived(tmp_path, "opus")
    try:
        assert await service.resume() == 1
        await wait_for(lambda: sent_models(api) == ["opus"])
        live = service.live[SID]
        await wait_for(lambda: live.renderer.model_line.shown == "opus")
        assert not [t for t in platform.texts_in(thread) if t.startswith("Model")]
        assert (await store.session_model(SID)).chosen == "opus"
    finally:
        await service.close()
        await store.close()
        await edge.close()
        await api.close()


async def test_no_model_chosen_sends_none(tmp_path):
    api, store, edge, service, _, _ = await revived(tmp_path, None)
    try:
        assert await service.resume() == 1
        await wait_for(lambda: len(api.connections) == 1)
        assert sent_models(api) == []
    finally:
        await service.close()
        await store.close()
        await edge.close()
        await api.close()
