"""The gateway's master connection against a fake Edge API on loopback: user tokens and their
refresh, error bodies, and the session link's reconnects with fresh tickets and de-duplication."""

from __future__ import annotations

import asyncio
import logging

import pytest

from gateway.edge_client import EdgeApiError, EdgeClient
from gateway.edge_link import SeenIds, SessionLink
from rawp.clock import FakeClock
from rawp.frames import dump_frame, make_frame
from tests.gateway.fake_edge_api import SECRET, FakeEdgeApi, wait_for
from tests.support import free_port

SID = "8b0c1c36-1111-4a1a-9a1a-000000000001"


@pytest.fixture
async def api():
    fake = await FakeEdgeApi().start()
    try:
        yield fake
    finally:
        await fake.close()


@pytest.fixture
async def clock():
    return FakeClock()


@pytest.fixture
async def edge(api, clock):
    client = EdgeClient(api.url, SECRET, clock=clock)
    try:
        yield client
    finally:
        await client.close()


def text(type: str, payload: dict, **extra) -> str:
    return dump_frame(make_frame(type, payload, session_id=SID, **extra))


def token_calls(api: FakeEdgeApi) -> list:
    return [c for c in api.calls if c[1] == "/v1/edge/auth/token"]


# --- tokens ----------------------------------------------------------------------------------


async def test_a_user_token_is_fetched_once_and_reused(api, edge):
    await edge.list_nodes("discord:1")
    await edge.list_nodes("discord:1")
    assert len(token_calls(api)) == 1
    assert token_calls(api)[0][2] == f"Bearer {SECRET}"
    node_calls = [c for c in api.calls if c[1] == "/v1/edge/nodes"]
    assert all(c[2].startswith("Bearer user-token-") for c in node_calls)


async def test_each_chat_user_gets_their_own_token(api, edge):
    await edge.list_nodes("discord:1")
    await edge.list_nodes("slack:T1:U2")
    tokens = {c[2] for c in api.calls if c[1] == "/v1/edge/nodes"}
    assert len(tokens) == 2
    assert any(t.endswith("slack:T1:U2") for t in tokens)


async def test_a_token_is_renewed_a_minute_before_it_expires(api, edge, clock):
    api.token_ttl = 900
    await edge.list_nodes("discord:1")
    clock.advance(900 - 61)
    await edge.list_nodes("discord:1")
    assert len(token_calls(api)) == 1
    clock.advance(2)  # now within the last minute
    await edge.list_nodes("discord:1")
    assert len(token_calls(api)) == 2


async def test_a_401_gets_a_new_token_and_the_call_is_retried_once(api, edge):
    await edge.list_nodes("discord:1")
    api.valid_tokens.clear()  # the master restarted and forgot every token
    nodes = await edge.list_nodes("discord:1")
    assert nodes[0].node_id == "n1"
    assert len(token_calls(api)) == 2


async def test_a_401_twice_is_an_error_not_a_loop(api, edge):
    api.error_for["/v1/edge/nodes"] = (401, {"error_code": "INVALID_TOKEN", "message": "no"})
    with pytest.raises(EdgeApiError) as caught:
        await edge.list_nodes("discord:1")
    assert caught.value.status == 401
    assert len([c for c in api.calls if c[1] == "/v1/edge/nodes"]) == 2


async def test_an_error_body_becomes_its_code_and_message(api, edge):
    api.error_for["/v1/edge/nodes"] = (
        503,
        {"error_code": "CONFIG_NOT_SYNCED", "message": "the node has not synced"},
    )
    with pytest.raises(EdgeApiError) as caught:
        await edge.list_nodes("discord:1")
    assert (caught.value.status, caught.value.error_code) == (503, "CONFIG_NOT_SYNCED")
    assert caught.value.message == "the node has not synced"


async def test_an_answer_of_the_wrong_shape_is_a_clear_error_not_a_key_error(api, edge):
    """Replies are read through the models the master answers with (rawp.rest)."""
    api.error_for["/v1/edge/nodes"] = (200, {"nodes": [{"node_id": "n1"}]})
    with pytest.raises(EdgeApiError) as caught:
        await edge.list_nodes("discord:1")
    assert caught.value.error_code == "BAD_REPLY"
    assert "node listing" in caught.value.message and "nodes.0.device_name" in caught.value.message


async def test_a_start_the_master_would_refuse_is_refused_without_a_call(api, edge):
    calls = len(api.calls)
    with pytest.raises(EdgeApiError) as caught:
        await edge.create_session("discord:1", "n1", "x" * 201)
    assert (caught.value.status, caught.value.error_code) == (400, "INVALID_REQUEST")
    assert "agent_name" in caught.value.message
    assert len(api.calls) == calls  # nothing sent, not even for a token


async def test_a_wrong_secret_is_refused_and_never_shown(api, clock):
    client = EdgeClient(api.url, "wrong-secret-value-000000000000", clock=clock)
    try:
        with pytest.raises(EdgeApiError) as caught:
            await client.list_nodes("discord:1")
    finally:
        await client.close()
    assert caught.value.status == 401
    assert "wrong-secret" not in str(caught.value)
    assert "wrong-secret" not in repr(client)


async def test_an_unreachable_master_is_a_clear_error(clock):
    client = EdgeClient(f"http://127.0.0.1:{free_port()}", SECRET, clock=clock)
    try:
        with pytest.raises(EdgeApiError) as caught:
            await client.list_nodes("discord:1")
    finally:
        await client.close()
    assert (caught.value.status, caught.value.error_code) == (0, "MASTER_UNREACHABLE")


def test_a_gateway_without_the_secret_is_refused_at_once():
    with pytest.raises(ValueError, match="RAWP_EDGE_SECRET"):
        EdgeClient("http://127.0.0.1:1", "")


# --- the session link --------------------------------------------------------------------------


async def test_the_link_reconnects_with_a_new_ticket_and_its_cursor(api, edge):
    api.sessions.add(SID)
    first, second, third = (
        text("agent.text.done", {"content_index": i, "text": f"part {i}"}) for i in range(3)
    )
    # Connection 1 delivers two frames and goes away; connection 2 replays the second one
    # (already seen) and brings the third.
    api.scripts = [([first, second], 1001), ([second, third], None)]
    link = SessionLink(edge, "discord:1", SID, ticket=api.issue_ticket(), backoff_s=0.01)
    try:
        got = [await link.receive() for _ in range(3)]
    finally:
        await link.close()
    assert [f.payload.text for f in got] == ["part 0", "part 1", "part 2"]
    assert len(api.connections) == 2
    assert api.connections[0].last_message_id is None
    # The second connection names the last frame delivered, with a ticket from /tickets.
    assert api.connections[1].last_message_id == got[1].message_id
    assert api.connections[1].ticket != api.connections[0].ticket
    assert any(c[1] == f"/v1/edge/sessions/{SID}/tickets" for c in api.calls)


async def test_a_restarted_link_starts_from_its_cursor_and_master_frames_do_not_move_it(api, edge):
    api.sessions.add(SID)
    done = text("agent.text.done", {"content_index": 0, "text": "after the cursor"})
    made_by_master = [
        text("session.history", {"since_message_id": "m-9", "replayed": 1, "dropped": 0}),
        text("session.error", {"code": "CLIENT_UNAVAILABLE", "message": "away"}),
        text("session.error", {"code": "PROMPT_REJECTED_BY_POLICY", "message": "denied"}),
    ]
    later = text("agent.text.done", {"content_index": 1, "text": "on the next socket"})
    api.scripts = [([done, *made_by_master], 1001), ([later], None)]
    link = SessionLink(
        edge, "discord:1", SID, ticket=api.issue_ticket(), last_message_id="m-9", backoff_s=0.01
    )
    try:
        got = [await link.receive() for _ in range(5)]
    finally:
        await link.close()
    assert api.connections[0].last_message_id == "m-9"  # the durable cursor (rule 5)
    kinds = [f.type for f in got][1:4]
    assert kinds == ["session.history", "session.error", "session.error"]
    assert api.connections[1].last_message_id == got[0].message_id  # the client frame only


async def test_the_link_ends_when_the_session_is_gone(api, edge):
    api.sessions.add(SID)
    api.scripts = [([text("session.turn.start", {"turn_id": "t1", "prompt_message_id": "p"})],
                    1000)]  # fmt: skip
    link = SessionLink(edge, "discord:1", SID, ticket=api.issue_ticket(), backoff_s=0.01)
    assert (await link.receive()).type == "session.turn.start"
    api.sessions.discard(SID)  # terminated: a new ticket is refused with 404
    assert await link.receive() is None
    assert link.ended


async def test_an_unreadable_frame_is_skipped_and_the_socket_stays(api, edge):
    api.sessions.add(SID)
    good = text("agent.text.done", {"content_index": 0, "text": "after"})
    api.scripts = [(["{not json", '{"v": "rawp-dps-1.0"}', good], None)]
    link = SessionLink(edge, "discord:1", SID, ticket=api.issue_ticket())
    try:
        frame = await link.receive()
    finally:
        await link.close()
    assert frame.payload.text == "after"
    assert len(api.connections) == 1


async def test_a_frame_sent_as_the_socket_drops_is_sent_again_after_the_reconnect(api, edge):
    api.sessions.add(SID)
    api.scripts = [([], 1001), ([], None)]  # the first socket closes at once
    link = SessionLink(edge, "discord:1", SID, ticket=api.issue_ticket(), backoff_s=0.01)
    prompt = make_frame("control.prompt.request", {"prompt_text": "hi"}, session_id=SID)
    pump = asyncio.create_task(link.receive())  # as the renderer's pump always is
    try:
        await link.send(prompt)
        await wait_for(lambda: len(api.connections) == 2 and api.connections[1].received)
    finally:
        await link.close()
        await pump
    assert api.connections[1].received == [dump_frame(prompt)]


async def test_frames_older_than_the_resend_window_are_not_sent_again(api, edge):
    api.sessions.add(SID)
    api.scripts = [([], None), ([], None)]
    clock = FakeClock()
    link = SessionLink(edge, "discord:1", SID, ticket=api.issue_ticket(), clock=clock)
    old = make_frame("control.prompt.request", {"prompt_text": "old"}, session_id=SID)
    try:
        await link.send(old)
        await wait_for(lambda: api.connections and api.connections[0].received)
        clock.advance(60)  # a minute later the socket drops
        await api.sockets[0].close(code=1001)
        pump = asyncio.create_task(link.receive())
        await wait_for(lambda: len(api.connections) == 2)
        fresh = make_frame("control.prompt.cancel", {}, session_id=SID)
        await link.send(fresh)
        await wait_for(lambda: api.connections[1].received)
    finally:
        await link.close()
    await pump
    assert api.connections[1].received == [dump_frame(fresh)]


async def test_send_on_an_ended_link_raises_connection_error(api, edge):
    link = SessionLink(edge, "discord:1", SID)  # no such session: no ticket can be had
    with pytest.raises(ConnectionError):
        await link.send(make_frame("control.prompt.cancel", {}, session_id=SID))
    assert await link.receive() is None


async def test_a_refused_ticket_is_replaced_and_never_logged(api, edge, caplog):
    api.sessions.add(SID)
    api.scripts = [([text("agent.text.done", {"content_index": 0, "text": "in"})], None)]
    caplog.set_level(logging.DEBUG)
    link = SessionLink(edge, "discord:1", SID, ticket="spent-ticket-0123456789", backoff_s=0.01)
    try:
        frame = await link.receive()
    finally:
        await link.close()
    assert frame.payload.text == "in"
    assert [c.ticket for c in api.connections] != ["spent-ticket-0123456789"]
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("gateway"))
    assert "reconnect failed" in ours  # the refusal was seen and logged…
    assert "ticket-" not in ours  # …without the ticket, spent or fresh
    assert SECRET not in ours


def test_seen_ids_forget_the_oldest_beyond_their_window():
    seen = SeenIds(window=2)
    assert [seen.first_time(i) for i in ("a", "a", "b")] == [True, False, True]
    assert seen.first_time("c")  # "a" is now the oldest beyond the window: forgotten
    assert seen.first_time("a")
    assert not seen.first_time("c")
