"""File search over the client's WebSocket (DPS §16.1, A-28, A-30), end to end: the master's
`control.file.search` reaches the file index and `session.file.candidates` comes back."""

from __future__ import annotations

import orjson
import pytest

from rawp.clock import new_id
from rawp.config import DEFAULT_LIMITS
from tests.client.harness import frame, recv, running_client


def make_workspace(ws) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "auth.ts").write_text("export const x = 1\n")
    (ws / "src" / "author.py").write_text("x = 1\n")
    (ws / "README.md").write_text("# readme\n")
    (ws / "ignored").mkdir()
    (ws / "ignored" / "auth_secret.txt").write_text("no\n")
    (ws / ".gitignore").write_text("ignored/\n")
    for n in range(300):
        (ws / "src" / f"module_{n:03}.py").write_text("pass\n")


@pytest.fixture
async def session(tmp_path):
    async with running_client(tmp_path) as client:
        make_workspace(client.workspace)
        sid, ws = await client.start_session()
        await recv(ws), await recv(ws)
        yield sid, ws


async def search(ws, sid, payload) -> tuple[str, dict]:
    request = frame("control.file.search", {"query_id": new_id(), **payload}, sid)
    await ws.send(request)
    return orjson.loads(request)["message_id"], orjson.loads(request)["payload"]


async def test_search_answers_with_candidates_for_the_request(session):
    sid, ws = session
    message_id, payload = await search(ws, sid, {"query": "aut"})
    reply = await recv(ws)
    assert reply["type"] == "session.file.candidates"
    assert reply["parent_id"] == message_id  # F-CAND-01
    assert reply["payload"]["query_id"] == payload["query_id"]
    assert "turn_id" not in reply
    candidates = reply["payload"]["candidates"]
    paths = [c["path"] for c in candidates]
    assert "src/auth.ts" in paths and "src/author.py" in paths
    assert not any(p.startswith("ignored/") for p in paths)  # .gitignore respected
    auth = next(c for c in candidates if c["path"] == "src/auth.ts")
    assert (auth["name"], auth["directory"], auth["extension"]) == ("auth.ts", "src", ".ts")
    for r in auth["match_ranges"]:  # into path, end exclusive
        assert 0 <= r["start"] < r["end"] <= len(auth["path"])
    assert isinstance(reply["payload"]["truncated"], bool)


async def test_max_results_is_clamped_and_truncation_reported(session):
    sid, ws = session
    _, payload = await search(ws, sid, {"query": "", "max_results": 500})
    reply = await recv(ws)
    assert reply["payload"]["query_id"] == payload["query_id"]
    assert len(reply["payload"]["candidates"]) == 50
    assert reply["payload"]["truncated"] is True
    assert reply["payload"]["total_count"] > 50


async def test_extension_filters(session):
    sid, ws = session
    await search(ws, sid, {"query": "a", "filters": {"extensions": [".ts"]}})
    reply = await recv(ws)
    assert [c["path"] for c in reply["payload"]["candidates"]] == ["src/auth.ts"]


async def test_a_cancelled_query_never_gets_candidates(session):
    sid, ws = session
    # Cancelled before it arrives, and cancelled right behind it: neither is ever answered.
    early = new_id()
    await ws.send(frame("control.file.search.cancel", {"query_id": early}, sid))
    await ws.send(frame("control.file.search", {"query_id": early, "query": "auth"}, sid))
    racing = new_id()
    await ws.send(frame("control.file.search", {"query_id": racing, "query": "module"}, sid))
    await ws.send(frame("control.file.search.cancel", {"query_id": racing}, sid))
    _, last = await search(ws, sid, {"query": "readme"})
    while True:
        reply = await recv(ws)
        assert reply["payload"].get("query_id") not in (early, racing), reply
        if reply["payload"].get("query_id") == last["query_id"]:
            break
    assert reply["payload"]["candidates"][0]["path"] == "README.md"


async def test_candidates_are_cut_to_the_pinned_frame_size(tmp_path):
    limits = DEFAULT_LIMITS.model_copy(update={"max_frame_size": 1024})
    async with running_client(tmp_path, limits=limits) as client:
        make_workspace(client.workspace)
        sid, ws = await client.start_session()
        await recv(ws), await recv(ws)
        _, payload = await search(ws, sid, {"query": "module", "max_results": 50})
        raw = await ws.recv()
        assert len(raw.encode()) <= 1024
        reply = orjson.loads(raw)
        assert reply["payload"]["query_id"] == payload["query_id"]
        assert 0 < len(reply["payload"]["candidates"]) < 50
        assert reply["payload"]["truncated"] is True
