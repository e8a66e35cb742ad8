"""The web edge's WebSocket relay and static files against the fake Edge API on loopback
(tests/gateway/fake_edge_api.py): frames pass verbatim both ways, the browser's
`last_message_id` reaches the master, the master dropping the socket closes the browser's with
1012, a session the master refuses is an HTTP error in JSON, and no file outside static/ or
directory listing is served. The web edge runs in process with a real SQLite store."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from adapters.web import WebConfig, WebEdge
from gateway.edge_client import EdgeClient
from gateway.storage.conversation_store import ConversationStore
from gateway.storage.web_logins import WebLogins
from gateway.storage.web_prompts import WebPrompts
from tests.gateway.fake_edge_api import SECRET, FakeEdgeApi, wait_for

# Odd spacing and an unknown field: the relay must not re-encode what it forwards.
ODD_FRAME = '{"type":  "agent.text.delta", "message_id": "m-1", "extra": [1, 2]}'


@pytest.fixture
async def web(tmp_path):
    master = await FakeEdgeApi().start()
    master.sessions.add("s1")
    store = await ConversationStore.open(tmp_path / "conversations.sqlite3")
    edge = EdgeClient(master.url, SECRET)
    server = WebEdge(
        edge,
        WebLogins(store.database),
        WebConfig(port=0),
        edge_secret=SECRET,
        prompts=WebPrompts(store.database),
    )
    await server.start()
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as http:
        async with http.get(await server.link_for("discord:7"), allow_redirects=False) as answer:
            assert answer.status == 303
        try:
            yield master, server, http
        finally:
            await server.close()
            await edge.close()
            await store.close()
            await master.close()


def stream(server: WebEdge, session: str = "s1", query: str = "") -> str:
    return f"{server.public_url}/api/sessions/{session}/stream{query}"


async def test_frames_pass_verbatim_both_ways_and_the_cursor_reaches_the_master(web):
    master, server, http = web
    master.scripts.append(([ODD_FRAME], None))
    async with http.ws_connect(
        stream(server, query="?last_message_id=m-0"), headers={"Origin": server.public_url}
    ) as ws:
        assert (await ws.receive_str(timeout=10)) == ODD_FRAME
        await ws.send_str("not json at all {")  # the master judges frames, not the relay
        await ws.send_str(ODD_FRAME)
        await wait_for(lambda: len(master.connections[0].received) == 2)
    [connection] = master.connections
    assert connection.received == ["not json at all {", ODD_FRAME]
    assert connection.last_message_id == "m-0"
    # The gateway asked for the ticket as the cookie's subject; the browser never saw it.
    assert any(path == "/v1/edge/sessions/s1/tickets" for _, path, _ in master.calls)


async def test_the_master_dropping_the_socket_closes_the_browsers_with_1012(web):
    master, server, http = web
    master.scripts.append(([ODD_FRAME], 1001))
    async with http.ws_connect(stream(server), headers={"Origin": server.public_url}) as ws:
        assert (await ws.receive_str(timeout=10)) == ODD_FRAME
        closing = await ws.receive(timeout=10)
        assert closing.type == aiohttp.WSMsgType.CLOSE and closing.data == 1012


async def test_a_session_the_master_refuses_is_a_json_error_before_any_socket(web):
    master, server, http = web
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await http.ws_connect(stream(server, "not-mine"), headers={"Origin": server.public_url})
    assert refused.value.status == 404  # the master's answer to the ticket, kept
    async with http.get(stream(server), headers={"Origin": server.public_url}) as plain:
        assert plain.status == 400  # not an upgrade: said in JSON, no ticket taken
        assert (await plain.json())["error_code"] == "WEBSOCKET_REQUIRED"
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await http.ws_connect(stream(server))  # no Origin: not this site's page
    assert refused.value.status == 403
    assert master.connections == []


async def test_only_the_apps_own_files_are_served(web):
    _, server, http = web
    base = server.public_url
    async with http.get(f"{base}/static/index.html") as page:
        assert page.status == 200
    for path in ("/static/", "/static/../server.py", "/static/%2e%2e/server.py", "/api/nothing"):
        async with http.get(base + path) as answer:
            assert answer.status in (403, 404), path
            body = await answer.json()
            assert set(body) == {"error_code", "message"}, path


async def test_a_session_the_master_ended_closes_the_browsers_with_1000(web):
    """Issue 30 §2: the page must learn the session ended (and offer Resume), not reconnect."""
    master, server, http = web
    master.scripts.append(([ODD_FRAME], 1000))
    async with http.ws_connect(stream(server), headers={"Origin": server.public_url}) as ws:
        assert (await ws.receive_str(timeout=10)) == ODD_FRAME
        closing = await ws.receive(timeout=10)
        assert closing.type == aiohttp.WSMsgType.CLOSE and closing.data == 1000


async def test_a_stopping_gateway_closes_the_browsers_socket_with_1012_at_once(web):
    master, server, http = web
    master.scripts.append(([ODD_FRAME], None))
    async with http.ws_connect(stream(server), headers={"Origin": server.public_url}) as ws:
        assert (await ws.receive_str(timeout=10)) == ODD_FRAME
        started = asyncio.get_running_loop().time()
        await server.close()
        closing = await ws.receive(timeout=10)
        assert closing.type == aiohttp.WSMsgType.CLOSE and closing.data == 1012
        assert asyncio.get_running_loop().time() - started < 3


def prompt_frame(message_id: str, text: str, session: str = "s1") -> str:
    return json.dumps(
        {"v": "rawp-dps-1.0", "type": "control.prompt.request", "message_id": message_id,
         "session_id": session, "payload": {"prompt_text": text, "input_type": "text"}}
    )  # fmt: skip


async def test_the_readers_prompts_are_kept_for_a_reload_and_forgotten_with_the_session(web):
    # Issue 28 §1: the master's replay has no prompts; the relay keeps the reader's own.
    master, server, http = web
    master.scripts.append(([], None))
    async with http.ws_connect(stream(server), headers={"Origin": server.public_url}) as ws:
        await ws.send_str(prompt_frame("p-1", "fix \\<@ the bug"))  # typed `<@`, kept as typed
        await ws.send_str(ODD_FRAME)  # not a prompt: not kept
        await ws.send_str(prompt_frame("p-2", "for another session", session="s2"))
        await ws.send_str(prompt_frame("p-1", "fix \\<@ the bug"))  # a resend: kept once
        await wait_for(lambda: len(master.connections[0].received) == 4)
    url = f"{server.public_url}/api/sessions/s1/prompts"
    async with http.get(url) as answer:
        assert answer.status == 200
        prompts = (await answer.json())["prompts"]
    assert [(p["message_id"], p["text"]) for p in prompts] == [("p-1", "fix <@ the bug")]
    # Another user signed in on the same gateway reads none of them.
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as other:
        async with other.get(await server.link_for("discord:8"), allow_redirects=False):
            pass
        async with other.get(url) as answer:
            assert (await answer.json()) == {"prompts": []}
    async with http.delete(
        f"{server.public_url}/api/sessions/s1", headers={"Origin": server.public_url}
    ) as ended:
        assert ended.status == 204
    async with http.get(url) as answer:
        assert (await answer.json()) == {"prompts": []}
