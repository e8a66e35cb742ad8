"""Observability end to end (issue 17 §2): a real master and a real client (processes,
loopback, `--dev`, JSON logs), the demo agent, an edge written here. One relayed turn and one
reconnect move the counters on both tiers' `/metrics` (read with prometheus_client's parser,
with the scrape token: without it the scrape is refused);
neither the scrapes nor any JSON log line carries the edge secret, a user token or a ticket,
and the master's lines about the session name it."""

from __future__ import annotations

import json

import aiohttp
import pytest

from tests.edge.conftest import OWNER
from tests.edge.stack import EDGE_SECRET, edge_for, frame, recv, recv_until, running_stack
from tests.scrape import samples, value


async def scrape(url: str, headers: dict | None = None) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as answer:
        return answer.status, await answer.text()


def json_lines(text: str) -> list[dict]:
    """The log's JSON lines (a process may also print a plain banner line)."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


TOKEN = "scrape-token-for-tests-0123456789"


@pytest.fixture
def json_stack(tmp_path):
    env = {"RAWP_LOG_FORMAT": "json", "RAWP_METRICS_TOKEN": TOKEN}
    with running_stack(tmp_path, OWNER, env=env) as made:
        yield made


async def test_a_relayed_turn_moves_the_counters_and_leaks_no_secret(json_stack):
    stack = json_stack
    if True:
        master_metrics = f"{stack.master_url}/metrics"
        client_metrics = f"http://127.0.0.1:{stack.client_port}/metrics"
        async with edge_for(stack.master_url, OWNER) as edge:
            status, nodes = await edge.call("GET", "/v1/edge/nodes")
            node = nodes["nodes"][0]["node_id"]
            body = {"agent_name": "demo", "workspace_path": str(stack.root)}
            status, made = await edge.call("POST", f"/v1/edge/nodes/{node}/sessions", body)
            assert status == 201, made
            sid, tickets = made["session_id"], [made["edge_ws_ticket"]]
            ws = await edge.connect(sid, tickets[0])
            greeting = [await recv(ws), await recv(ws)]
            prompt = frame("control.prompt.request", {"prompt_text": "fix the bug"}, session_id=sid)
            await ws.send(prompt)
            turn = await recv_until(ws, "session.turn.end")
            usage = [f["payload"] for f in turn if f["type"] == "session.usage"]
            # Reconnect with a cursor mid-turn: the frames after it are replayed.
            await ws.close()
            status, again = await edge.call("POST", f"/v1/edge/sessions/{sid}/tickets")
            tickets.append(again["edge_ws_ticket"])
            cursor = turn[1]["message_id"]
            ws = await edge.connect(sid, tickets[1], last_message_id=cursor)
            history = await recv(ws)
            assert history["type"] == "session.history"
            replayed = history["payload"]["replayed"]
            assert replayed == len(turn) - 2
            for _ in range(replayed):
                await recv(ws)

            # With RAWP_METRICS_TOKEN set, only its bearer is answered (runtime.scrape_access).
            for url in (master_metrics, client_metrics):
                status, body = await scrape(url)
                assert status == 403 and json.loads(body)["error_code"] == "METRICS_FORBIDDEN"
            bearer = {"Authorization": f"Bearer {TOKEN}"}
            status, master_text = await scrape(master_metrics, bearer)
            assert status == 200, master_text
            status, client_text = await scrape(client_metrics, bearer)
            assert status == 200, client_text
            user_token = edge.token
        stack.stop_client()
        # The client's whole log: its start, then the rest (a clean stop adds one plain line).
        client_log = stack.client_output()
    master_log = stack.master_log.read_text()

    m = samples(master_text)
    relayed = len(greeting) + len(turn) + 1 + replayed  # + the session.history frame
    assert value(m, "rawp_master_frames_relayed_total", direction="to_edge") == relayed
    assert value(m, "rawp_master_frames_relayed_total", direction="to_client") == 1
    assert value(m, "rawp_master_relay_latency_seconds_count") >= len(turn)
    assert value(m, "rawp_master_replay_frames_count") == 1
    assert value(m, "rawp_master_replay_frames_sum") == replayed
    assert value(m, "rawp_master_sessions", state="RUNNING") == 1
    assert value(m, "rawp_master_sockets", peer="edge") == 1
    assert value(m, "rawp_master_sockets", peer="client") == 1
    assert value(m, "rawp_master_edge_connections_total", resumed="true") == 1
    assert usage, "the demo agent reports usage"
    assert value(m, "rawp_master_tokens_total", kind="input") == sum(
        u["input_tokens"] for u in usage
    )
    assert value(m, "rawp_master_tokens_total", kind="output") == sum(
        u["output_tokens"] for u in usage
    )

    c = samples(client_text)
    assert value(c, "rawp_client_agent_turns_total", kind="script", outcome="end_turn") == 1
    assert value(c, "rawp_client_agent_turn_seconds_count", kind="script") == 1
    assert value(c, "rawp_client_frames_sent_total") >= len(greeting) + len(turn)
    assert value(c, "rawp_client_sessions", state="RUNNING") == 1
    assert value(c, "rawp_client_sockets", peer="master") == 1

    secrets = [EDGE_SECRET, TOKEN, user_token, *tickets]
    for text in (master_text, client_text, master_log, client_log):
        for secret in secrets:
            assert secret not in text
    assert "fix the bug" not in master_text + client_text  # no prompt text in a label
    master_lines = json_lines(master_log)
    assert master_lines and json_lines(client_log)
    assert all({"ts", "level", "logger", "message"} <= set(line) for line in master_lines)
    about_the_session = [line for line in master_lines if sid in line["message"]]
    assert about_the_session
    assert all(line.get("session_id") == sid for line in about_the_session), about_the_session
    assert any("request_id" in line for line in master_lines)
