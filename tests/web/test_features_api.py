"""The web edge's issue 30 routes (adapters/web/features.py, the start's `worktree`, `resume` and
`fork`) as a browser calls them, against a real master and client (tests/edge/stack.py) and the
fake transcription service: the owner rule holds through the web edge (another signed-in user
gets the master's 404 and changes nothing), every refusal is JSON with the master's code, and a
clip is transcribed by the chat's own client. The web edge runs in process with a real SQLite
store; two cookie jars are two signed-in users."""

from __future__ import annotations

import asyncio
import contextlib

import aiohttp
import pytest

from adapters.web import WebConfig, WebEdge
from gateway.edge_client import EdgeClient
from gateway.sessions.voice import NOT_CONFIGURED, Transcriber, VoiceSettings
from gateway.storage.conversation_store import ConversationStore
from gateway.storage.web_logins import WebLogins
from gateway.storage.web_prompts import WebPrompts
from tests.client.test_worktrees import make_repository, rawp_branches
from tests.edge.stack import EDGE_SECRET, running_stack
from tests.fakes.transcription_server import FakeTranscription

OWNER = "discord:1001"
STRANGER = "discord:2002"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with running_stack(tmp_path_factory.mktemp("web-features"), OWNER) as made:
        yield made


@contextlib.asynccontextmanager
async def web_edge(stack, tmp_path, transcriber: Transcriber | None = None):
    """The web edge on the stack's master; `users(subject)` is a signed-in browser."""
    store = await ConversationStore.open(tmp_path / "conversations.sqlite3")
    edge = EdgeClient(stack.master_url, EDGE_SECRET)
    server = WebEdge(
        edge,
        WebLogins(store.database),
        WebConfig(port=0),
        edge_secret=EDGE_SECRET,
        prompts=WebPrompts(store.database),
        transcriber=transcriber,
    )
    await server.start()
    browsers: list[aiohttp.ClientSession] = []

    async def user(subject: str) -> aiohttp.ClientSession:
        http = aiohttp.ClientSession(
            base_url=server.public_url, cookie_jar=aiohttp.CookieJar(unsafe=True)
        )
        browsers.append(http)
        async with http.get(await server.link_for(subject), allow_redirects=False) as answer:
            assert answer.status == 303
        return http

    try:
        yield user
    finally:
        for http in browsers:
            await http.close()
        await server.close()
        await edge.close()
        await store.close()


async def call(http, method: str, path: str, body=None, **kwargs) -> tuple[int, dict | None]:
    async with http.request(method, path, json=body, **kwargs) as answer:
        return answer.status, (await answer.json() if answer.status != 204 else None)


async def node_of(http) -> str:
    status, nodes = await call(http, "GET", "/api/nodes")
    assert status == 200, nodes
    return nodes["nodes"][0]["node_id"]


async def test_only_the_owner_diffs_and_merges_a_worktree_through_the_web_edge(stack, tmp_path):
    repo = await asyncio.to_thread(make_repository, stack.root.parent / "web-repo")
    async with web_edge(stack, tmp_path) as user:
        owner, stranger = await user(OWNER), await user(STRANGER)
        node = await node_of(owner)
        start = {"agent_name": "demo", "workspace_path": str(repo), "worktree": True}
        status, made = await call(owner, "POST", f"/api/nodes/{node}/sessions", start)
        assert status == 201, made
        sid = made["session_id"]
        tree = repo.parent / "web-repo.worktrees" / sid.replace("-", "")[:8]
        (tree / "shared.txt").write_text("from the session\n")
        path = f"/api/sessions/{sid}/worktree"

        status, refused = await call(stranger, "GET", path)
        assert (status, refused["error_code"]) == (404, "SESSION_NOT_FOUND")
        status, refused = await call(stranger, "POST", path, {"action": "merge"})
        assert (status, refused["error_code"]) == (404, "SESSION_NOT_FOUND")
        status, refused = await call(owner, "POST", path, {"action": "diff"})
        assert (status, refused["error_code"]) == (400, "INVALID_ACTION")
        foreign = {"Origin": "http://evil.example"}
        status, refused = await call(owner, "POST", path, {"action": "merge"}, headers=foreign)
        assert (status, refused["error_code"]) == (403, "FOREIGN_ORIGIN")
        assert (repo / "shared.txt").read_text() == "base\n"  # nothing merged by any of them

        status, diff = await call(owner, "GET", path)
        assert status == 200 and "+from the session" in diff["diff"], diff
        status, merged = await call(owner, "POST", path, {"action": "merge"})
        assert (status, merged["into"]) == (200, "main"), merged
        assert (repo / "shared.txt").read_text() == "from the session\n"
        assert rawp_branches(repo) == ""
        status, gone = await call(owner, "GET", path)
        assert (status, gone["error_code"]) == (404, "NO_WORKTREE")

        # Resume and fork are starts: fork needs resume, and another's session is not found.
        status, refused = await call(
            owner, "POST", f"/api/nodes/{node}/sessions", {"agent_name": "demo", "fork": True}
        )
        assert (status, refused["error_code"]) == (400, "INVALID_REQUEST")
        body = {"agent_name": "demo", "resume": sid}
        status, refused = await call(stranger, "POST", f"/api/nodes/{node}/sessions", body)
        assert status == 404, refused


async def test_schedules_are_the_owners_own(stack, tmp_path):
    async with web_edge(stack, tmp_path) as user:
        owner, stranger = await user(OWNER), await user(STRANGER)
        node = await node_of(owner)
        wanted = {
            "node_id": node,
            "agent_name": "demo",
            "schedule": "every weekday 9:00",
            "prompt": "summarise the commits",
            "timezone": "Europe/Berlin",
        }
        status, made = await call(stranger, "POST", "/api/schedules", wanted)
        assert (status, made["error_code"]) == (404, "NODE_NOT_FOUND")  # not the stranger's node
        status, made = await call(owner, "POST", "/api/schedules", wanted)
        assert status == 201, made
        assert (made["schedule"], made["paused"]) == ("0 9 * * 1-5", False)
        status, bad = await call(owner, "POST", "/api/schedules", {**wanted, "schedule": "often"})
        assert (status, bad["error_code"]) == (400, "INVALID_SCHEDULE")
        sid = made["schedule_id"]

        assert (await call(stranger, "GET", "/api/schedules"))[1] == {"schedules": []}
        status, refused = await call(stranger, "POST", f"/api/schedules/{sid}/pause")
        assert (status, refused["error_code"]) == (404, "SCHEDULE_NOT_FOUND")
        status, refused = await call(stranger, "DELETE", f"/api/schedules/{sid}")
        assert (status, refused["error_code"]) == (404, "SCHEDULE_NOT_FOUND")

        status, paused = await call(owner, "POST", f"/api/schedules/{sid}/pause")
        assert (status, paused["paused"], paused["next_run_at"]) == (200, True, None)
        status, resumed = await call(owner, "POST", f"/api/schedules/{sid}/resume")
        assert (status, resumed["paused"]) == (200, False) and resumed["next_run_at"]
        assert (await call(owner, "DELETE", f"/api/schedules/{sid}"))[0] == 204
        assert (await call(owner, "GET", "/api/schedules"))[1] == {"schedules": []}


async def test_a_clip_is_transcribed_by_the_chats_transcription_client(stack, tmp_path):
    async with FakeTranscription(text=" fix the build ") as whisper:
        voice = Transcriber(VoiceSettings(url=whisper.base_url, model="small.en"))
        async with web_edge(stack, tmp_path, voice) as user:
            http = await user(OWNER)
            assert (await call(http, "GET", "/api/voice"))[1] == {"configured": True}
            clip = b"\x1aE\xdf\xa3 webm voice"
            async with http.post(
                "/api/voice", data=clip, headers={"Content-Type": "audio/webm"}
            ) as answer:
                assert (answer.status, await answer.json()) == (200, {"text": "fix the build"})
            [heard] = whisper.requests
            assert (heard.filename, heard.content_type, heard.data) == (
                "voice.webm",
                "audio/webm",
                clip,
            )
            assert heard.model == "small.en"
            async with http.post(
                "/api/voice", data=b"text", headers={"Content-Type": "text/plain"}
            ) as answer:
                assert (answer.status, (await answer.json())["error_code"]) == (415, "NOT_AUDIO")
            whisper.status = 500
            async with http.post(
                "/api/voice", data=clip, headers={"Content-Type": "audio/ogg"}
            ) as answer:
                failed = await answer.json()
            assert (answer.status, failed["error_code"]) == (502, "TRANSCRIPTION_FAILED")
            assert "answered HTTP 500" in failed["message"]


async def test_without_a_transcription_service_a_clip_is_refused_in_one_line(stack, tmp_path):
    async with web_edge(stack, tmp_path) as user:
        http = await user(OWNER)
        assert (await call(http, "GET", "/api/voice"))[1] == {"configured": False}
        async with http.post(
            "/api/voice", data=b"OggS", headers={"Content-Type": "audio/ogg"}
        ) as answer:
            refused = await answer.json()
        assert (answer.status, refused) == (
            503,
            {"error_code": "VOICE_NOT_CONFIGURED", "message": NOT_CONFIGURED},
        )
