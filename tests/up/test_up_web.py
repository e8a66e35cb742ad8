"""The web edge of a real `rawp up` (issue 21): the printed one-time link signs a browser in,
the JSON API answers for that user only, and a session streams over the relayed WebSocket —
a prompt, the demo agent's approval answered from the browser side, the turn's end.

The "browser" is an aiohttp client with a cookie jar, sending what a browser sends (the
page's Origin). Everything else is real: `rawp up` as a child process (console beside the web
edge, its stdin held open), the master, the client and the demo agent it starts.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
from urllib.parse import urlsplit

import aiohttp
import orjson
import pytest

from rawp.frames import dump_frame, make_frame
from tests.support import Lines, Processes

NO_PLATFORMS = {"DISCORD_BOT_TOKEN": "", "SLACK_BOT_TOKEN": "", "RAWP_PLATFORM": ""}
LINK = re.compile(r"web: (http://127\.0\.0\.1:\d+/login\?t=\S+)")


def start_up(processes: Processes, tmp_path, *extra: str, env: dict | None = None):
    workspace = tmp_path / "project"
    workspace.mkdir(exist_ok=True)
    (workspace / "main.py").write_text("print('hello')\n")
    proc = processes.rawp(
        "up", "--state-dir", str(tmp_path / "state"), *extra,
        env={**NO_PLATFORMS, **(env or {})}, cwd=workspace,
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    return proc, Lines(proc.stderr)


def browser() -> aiohttp.ClientSession:
    # unsafe=True: aiohttp's jar otherwise ignores cookies from an IP address host.
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


def frame(type: str, payload: dict, session_id: str, **extra) -> str:
    return dump_frame(make_frame(type, payload, session_id=session_id, **extra))


def answer_frame(ask: dict, option_id: str = "allow") -> str:
    """What the web app's button sends for `ask` (an `agent.interaction.request` frame)."""
    response = {"interaction_id": ask["payload"]["interaction_id"], "option_id": option_id}
    return frame(
        "control.interaction.response",
        response,
        ask["session_id"],
        turn_id=ask.get("turn_id"),
        parent_id=ask["message_id"],
    )


async def audit_records(state_dir, node_id: str) -> list[dict]:
    """The owner's approval records, read from the master with this run's edge secret."""
    run = orjson.loads((state_dir / "up.json").read_bytes())
    master = f"http://127.0.0.1:{run['master_port']}"
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{master}/v1/edge/auth/token",
            json={"subject": "console:local"},
            headers={"Authorization": f"Bearer {run['edge_secret']}"},
        ) as answer:
            token = (await answer.json())["access_token"]
        for _ in range(50):  # the record is written just after the answer is relayed
            async with http.get(
                f"{master}/v1/edge/audit?node_id={node_id}",
                headers={"Authorization": f"Bearer {token}"},
            ) as answer:
                records = (await answer.json())["records"]
            if records:
                return records
            await asyncio.sleep(0.1)
    return []


async def receive_until(ws, wanted: str, seen: list[dict], within_s: float = 60) -> dict:
    async with asyncio.timeout(within_s):
        while True:
            message = await ws.receive()
            assert message.type == aiohttp.WSMsgType.TEXT, (message.type, message.extra)
            got = orjson.loads(message.data)
            seen.append(got)
            if got["type"] == wanted:
                return got


async def test_a_printed_link_signs_in_once_and_a_session_streams_in_the_browser(
    processes, tmp_path
):
    up, lines = start_up(processes, tmp_path)
    link = (await lines.wait_for(LINK)).group(1)
    base = link.split("/login")[0]
    async with browser() as http:
        # Not signed in: every /api route is 401 JSON.
        async with http.get(f"{base}/api/nodes") as answer:
            assert answer.status == 401
            assert (await answer.json())["error_code"] == "NOT_SIGNED_IN"

        # The link: 303 to /, with the cookie HttpOnly, SameSite=Strict, not Secure on http.
        async with http.get(link, allow_redirects=False) as answer:
            assert answer.status == 303 and answer.headers["Location"] == "/"
            cookie = answer.cookies["rawp_web"]
            assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/"
            assert not cookie["secure"]
        # ... and only once.
        async with browser() as other, other.get(link, allow_redirects=False) as again:
            assert again.status == 401
            assert "LOGIN_LINK_INVALID" in await again.text()
            assert "rawp_web" not in again.cookies

        async with http.get(f"{base}/api/me") as answer:
            assert await answer.json() == {"subject": "console:local", "name": "local"}
        async with http.get(f"{base}/") as page:
            assert page.status == 200 and "text/html" in page.headers["Content-Type"]
            assert "script-src 'self'" in page.headers["Content-Security-Policy"]

        async with http.get(f"{base}/api/nodes") as answer:
            [node] = (await answer.json())["nodes"]
        async with http.get(f"{base}/api/nodes/{node['node_id']}/agents") as answer:
            assert {"name": "demo"} in (await answer.json())["agents"]
        async with http.post(
            f"{base}/api/nodes/{node['node_id']}/sessions",
            json={"agent_name": "demo"},
            headers={"Origin": "http://evil.example"},
        ) as answer:  # another site's form or fetch, with the cookie
            assert answer.status == 403
            assert (await answer.json())["error_code"] == "FOREIGN_ORIGIN"
        async with http.post(
            f"{base}/api/nodes/{node['node_id']}/sessions",
            json={"agent_name": "demo"},
            headers={"Origin": base},
        ) as answer:
            assert answer.status == 201, await answer.text()
            made = await answer.json()
        assert made["status"] == "RUNNING"
        assert "edge_ws_ticket" not in made  # the browser never holds an edge credential
        sid = made["session_id"]
        async with http.get(f"{base}/api/sessions") as answer:
            assert sid in {s["session_id"] for s in (await answer.json())["sessions"]}

        # A page from another site may not open the stream, with the cookie or not.
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(
                f"{base}/api/sessions/{sid}/stream", headers={"Origin": "http://evil.example"}
            )
        assert refused.value.status == 403

        # The stream: a prompt that asks for approval, answered here, then the turn ends.
        seen: list[dict] = []
        async with http.ws_connect(
            f"{base}/api/sessions/{sid}/stream", headers={"Origin": base}
        ) as ws:
            await ws.send_str("this is not a frame")  # the master answers; the relay lives on
            await ws.send_str(
                frame("control.prompt.request", {"prompt_text": "please approve this"}, sid)
            )
            ask = await receive_until(ws, "agent.interaction.request", seen)
            assert any(f["type"] == "session.error" for f in seen), seen  # the bad frame's
            assert "allow" in {o["option_id"] for o in ask["payload"]["options"]}
            await ws.send_str(answer_frame(ask))
            end = await receive_until(ws, "session.turn.end", seen)
            assert end["payload"]["stop_reason"] == "end_turn"
            said = "".join(
                f["payload"].get("text", "") for f in seen if f["type"] == "agent.text.done"
            )
            assert "You chose: allow" in said, said
            last_id = seen[-1]["message_id"]

        # The answer given in the browser is in the master's audit log, as a chat edge's is.
        [record] = await audit_records(tmp_path / "state", node["node_id"])
        assert record["outcome"] == "answered" and record["platform"] == "web"
        assert record["actor"] == "console:local" and record["option_id"] == "allow"
        assert record["interaction_id"] == ask["payload"]["interaction_id"]
        assert record["option_label"] == next(
            o["label"] for o in ask["payload"]["options"] if o["option_id"] == "allow"
        )

        # Resuming with the last message id: nothing from the finished turn again.
        async with http.ws_connect(
            f"{base}/api/sessions/{sid}/stream?last_message_id={last_id}",
            headers={"Origin": base},
        ) as ws:
            await ws.send_str(frame("control.prompt.request", {"prompt_text": "and again"}, sid))
            again: list[dict] = []
            await receive_until(ws, "session.turn.end", again)
            ids = {f["message_id"] for f in seen}
            assert not [f for f in again if f["message_id"] in ids and f["type"] != "session.error"]

        async with http.get(f"{base}/api/usage?days=14") as answer:
            days = (await answer.json())["days"]
            assert [d["node_id"] for d in days] == [node["node_id"]]
            assert days[0]["output_tokens"] > 0
        async with http.delete(f"{base}/api/sessions/{sid}", headers={"Origin": base}) as gone:
            assert gone.status == 204
        async with http.post(f"{base}/logout", headers={"Origin": base}) as out:
            assert out.status == 204
        async with http.get(f"{base}/api/me") as answer:
            assert answer.status == 401  # the cookie was cleared
    up.stdin.close()  # the console's input ends: rawp up shuts down
    assert await asyncio.to_thread(up.wait, 60) == 0


async def test_forged_and_tampered_credentials_are_refused(processes, tmp_path):
    up, lines = start_up(processes, tmp_path)
    link = (await lines.wait_for(LINK)).group(1)
    base = link.split("/login")[0]
    async with browser() as http:
        forged = link[:-4] + ("AAAA" if not link.endswith("AAAA") else "BBBB")
        async with http.get(forged, allow_redirects=False) as answer:
            assert answer.status == 401 and "LOGIN_LINK_INVALID" in await answer.text()
        async with http.get(f"{base}/login", allow_redirects=False) as answer:
            assert answer.status == 401
        async with http.get(link, allow_redirects=False) as answer:
            value = answer.cookies["rawp_web"].value  # the real link still works
        payload, signature = value.split(".")
        host = urlsplit(base).hostname
        for bad in (f"{payload}.{signature[:-2]}xx", f"{payload[:-2]}xx.{signature}", "junk"):
            http.cookie_jar.update_cookies({"rawp_web": bad}, response_url=aiohttp.client.URL(base))
            async with http.get(f"{base}/api/me") as answer:
                assert answer.status == 401, bad
                assert (await answer.json())["error_code"] == "NOT_SIGNED_IN"
        assert host == "127.0.0.1"
    up.stdin.close()
    assert await asyncio.to_thread(up.wait, 60) == 0


async def test_no_web_turns_the_web_edge_off(processes, tmp_path):
    up, lines = start_up(processes, tmp_path, "--no-web")
    await lines.wait_for(re.compile(r"development mode"))
    up.stdin.close()
    assert await asyncio.to_thread(up.wait, 60) == 0
    assert not any("web:" in line for line in lines.lines), lines.lines


async def test_rawp_up_with_the_web_edge_alone_needs_no_input_and_stops_on_sigterm(
    processes, tmp_path
):
    workspace = tmp_path / "project"
    workspace.mkdir()
    up = processes.rawp(
        "up", "--state-dir", str(tmp_path / "state"), "--platform", "web",
        env=NO_PLATFORMS, cwd=workspace,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    lines = Lines(up.stderr)
    link = (await lines.wait_for(LINK)).group(1)
    async with browser() as http:
        async with http.get(link) as page:  # follows the 303 to the app
            assert page.status == 200 and str(page.url).endswith("/")
        async with http.get(link.split("/login")[0] + "/api/sessions") as answer:
            assert (await answer.json()) == {"sessions": []}  # no console session was started
    up.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(up.wait, 60) == 0
