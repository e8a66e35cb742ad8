"""The client's HTTP API as the master calls it (RAWP §3.4.2, §4, §4.2–§4.4, §5.1–§5.2)."""

from __future__ import annotations

import pytest

from rawp.clock import new_id, new_secret
from rawp.config import DEFAULT_LIMITS
from rawp.tokens import SigningKey
from tests.client.harness import running_client

# Fixed ids: test ids must be the same in every collecting process (pytest-xdist workers).
SOME_SESSION = "6f1c2a8e-4b7d-4e2a-9c3f-1d2e3f4a5b6c"
ENDPOINTS = [
    ("GET", "/v1/health", None),
    ("GET", "/v1/agents", None),
    ("POST", "/v1/fs/list", {"target_path": "/"}),
    ("POST", "/v1/session/init", {"session_id": SOME_SESSION, "ticket": "t"}),
    ("DELETE", f"/v1/session/{SOME_SESSION}", None),
]


@pytest.fixture
async def client(tmp_path):
    async with running_client(tmp_path) as running:
        yield running


async def test_health_follows_the_session_count_immediately(client):
    status, body = await client.request("GET", "/v1/health")
    assert status == 200 and body["status"] == "online" and body["active_sessions"] == 0
    assert isinstance(body["uptime"], int)
    made = await client.init()
    assert made["status"] == 201
    assert (await client.request("GET", "/v1/health"))[1]["status"] == "busy"
    status, _ = await client.request("DELETE", f"/v1/session/{made['session_id']}")
    assert status == 204
    _, body = await client.request("GET", "/v1/health")
    assert body == {**body, "status": "online", "active_sessions": 0}


@pytest.mark.parametrize("method, path, body", ENDPOINTS)
async def test_every_master_call_needs_a_valid_client_token(client, method, path, body):
    forged = SigningKey.generate().sign({"sub": "master"}, 60, kind="client")
    wrong_kind = client.services.auth.key.sign({"sub": "master"}, 60, kind="node")
    for headers, code in (
        ({}, "TOKEN_MISSING"),
        ({"Authorization": "Basic abc"}, "TOKEN_MISSING"),
        ({"Authorization": "Bearer not-a-jwt"}, "INVALID_TOKEN"),
        ({"Authorization": f"Bearer {forged}"}, "INVALID_TOKEN"),
        ({"Authorization": f"Bearer {wrong_kind}"}, "INVALID_TOKEN"),
    ):
        status, answer = await client.request(method, path, body, headers=headers)
        assert (status, answer["error_code"]) == (401, code), headers
        assert answer["message"]


async def test_an_expired_token_is_refused_and_refresh_rotates(client):
    pair = client.services.auth.issue()
    client.clock.advance(pair.expires_in + 1)
    status, answer = await client.request(
        "GET", "/v1/health", headers={"Authorization": f"Bearer {pair.access_token}"}
    )
    assert (status, answer["error_code"]) == (401, "TOKEN_EXPIRED")
    status, fresh = await client.request(
        "POST", "/v1/auth/refresh", {"refresh_token": pair.refresh_token}, headers={}
    )
    assert status == 200 and set(fresh) == {"access_token", "refresh_token", "expires_in"}
    status, _ = await client.request(
        "GET", "/v1/health", headers={"Authorization": f"Bearer {fresh['access_token']}"}
    )
    assert status == 200
    # Rotation: the old refresh token died with its first use.
    status, answer = await client.request(
        "POST", "/v1/auth/refresh", {"refresh_token": pair.refresh_token}, headers={}
    )
    assert (status, answer["error_code"]) == (401, "INVALID_REFRESH_TOKEN")
    status, answer = await client.request("POST", "/v1/auth/refresh", {}, headers={})
    assert status == 400 and answer["error_code"] == "INVALID_REQUEST"


async def test_agents_lists_the_demo_agent_without_an_agents_file(client):
    status, body = await client.request("GET", "/v1/agents")
    assert status == 200
    assert body["agents"] == [{"id": "demo", "name": "demo", "is_active": True}]
    # The first allowed root is the default workspace the master may start sessions in.
    assert body["default_workspace_path"] == str(client.workspace.parent.resolve())


async def test_fs_list_returns_name_type_size_mtime(client):
    (client.workspace / "sub").mkdir()
    (client.workspace / "a.txt").write_text("hello")
    (client.workspace / "link").symlink_to(client.workspace / "a.txt")
    status, body = await client.request(
        "POST", "/v1/fs/list", {"target_path": str(client.workspace)}
    )
    assert status == 200
    entries = {e["name"]: e for e in body["entries"]}
    assert entries["a.txt"]["type"] == "file" and entries["a.txt"]["size"] == 5
    assert entries["sub"]["type"] == "directory" and entries["sub"]["size"] is None
    assert entries["link"]["type"] == "symlink"
    assert all(e["mtime"].endswith("Z") for e in entries.values())
    assert body["entries"][0]["name"] == "sub"  # directories first


@pytest.mark.parametrize(
    "body, status, code",
    [
        ({}, 400, "INVALID_REQUEST"),
        ({"target_path": 3}, 400, "INVALID_PATH"),
        ({"target_path": "/nonexistent-root/x"}, 403, "PATH_FORBIDDEN"),
    ],
)
async def test_fs_list_refuses_bad_requests(client, body, status, code):
    answer = await client.request("POST", "/v1/fs/list", body)
    assert (answer[0], answer[1]["error_code"]) == (status, code)


async def test_fs_list_of_a_missing_directory_is_404_and_of_a_file_400(client):
    (client.workspace / "f").write_text("x")
    status, body = await client.request(
        "POST", "/v1/fs/list", {"target_path": str(client.workspace / "nope")}
    )
    assert (status, body["error_code"]) == (404, "PATH_NOT_FOUND")
    status, body = await client.request(
        "POST", "/v1/fs/list", {"target_path": str(client.workspace / "f")}
    )
    assert (status, body["error_code"]) == (400, "NOT_A_DIRECTORY")


async def test_session_init_success_bodies(client):
    made = await client.init()
    assert made["status"] == 201
    assert made["body"] == {
        "session_id": made["session_id"],
        "status": "INIT",
        "agent_name": "demo",
        "workspace_path": str(client.workspace.resolve()),
        "ticket_expires_in": 60,
    }
    again = await client.init(session_id=made["session_id"], reattach=True)
    assert again["status"] == 200 and again["body"]["session_id"] == made["session_id"]


@pytest.mark.parametrize(
    "body, status, code",
    [
        ({"ticket": "t", "agent_name": "demo"}, 400, "INVALID_REQUEST"),
        ({"session_id": "not-a-uuid", "ticket": "t"}, 400, "INVALID_SESSION_ID"),
        ({"session_id": "A" * 36, "ticket": "t"}, 400, "INVALID_SESSION_ID"),
        ({"session_id": new_id(), "ticket": "t", "reattach": False}, 400, "BAD_REQUEST"),
        ({"session_id": new_id(), "ticket": "t", "agent_name": "demo"}, 400, "BAD_REQUEST"),
        ({"session_id": new_id(), "ticket": 5}, 400, "INVALID_REQUEST"),
        ({"session_id": new_id(), "ticket": ""}, 400, "INVALID_REQUEST"),
        ({"session_id": new_id(), "ticket": "t", "reattach": "yes please"}, 400, "INVALID_REQUEST"),
        ({"session_id": new_id(), "ticket": "t", "reattach": True}, 404, "SESSION_NOT_FOUND"),
        (
            {"session_id": new_id(), "ticket": "t", "reattach": True, "last_message_id": "x"},
            400,
            "INVALID_REQUEST",
        ),
        (
            {
                "session_id": new_id(),
                "ticket": "t",
                "agent_name": "rm -rf /",
                "workspace_path": "/",
            },
            403,
            "AGENT_NOT_ALLOWED",
        ),
    ],
)
async def test_session_init_errors(client, body, status, code):
    answer = await client.request("POST", "/v1/session/init", body)
    assert (answer[0], answer[1]["error_code"]) == (status, code), answer
    assert answer[1]["message"]


async def test_session_init_workspace_must_be_an_allowed_directory(client):
    (client.workspace / "file").write_text("x")
    made = await client.init(workspace=client.workspace / "file")
    assert (made["status"], made["body"]["error_code"]) == (400, "WORKSPACE_NOT_A_DIRECTORY")
    made = await client.init(workspace=client.workspace.parent.parent)
    assert (made["status"], made["body"]["error_code"]) == (403, "PATH_FORBIDDEN")


async def test_a_known_session_id_is_409_and_after_delete_reattach_is_404(client):
    made = await client.init()
    again = await client.init(session_id=made["session_id"])
    assert (again["status"], again["body"]["error_code"]) == (409, "SESSION_EXISTS")
    sid, ws = made["session_id"], await client.connect(made["session_id"], made["ticket"])
    await ws.recv()
    running = await client.init(session_id=sid)
    assert running["status"] == 409  # C-SESS-05: RUNNING
    assert (await client.request("DELETE", f"/v1/session/{sid}"))[0] == 204
    after = await client.init(session_id=sid, reattach=True)
    assert (after["status"], after["body"]["error_code"]) == (404, "SESSION_NOT_FOUND")
    status, body = await client.request("DELETE", f"/v1/session/{sid}")
    assert (status, body["error_code"]) == (404, "SESSION_NOT_FOUND")


@pytest.mark.parametrize(
    "data, status, code",
    [
        (b"{not json", 400, "INVALID_JSON"),
        (b"[1, 2]", 400, "INVALID_JSON"),
        (b"", 400, "INVALID_JSON"),
        (b'{"pad": "' + b"x" * (1024 * 1024 + 10) + b'"}', 413, "PAYLOAD_TOO_LARGE"),
    ],
)
async def test_malformed_bodies_are_400_or_413_never_500(client, data, status, code):
    for path in ("/v1/session/init", "/v1/fs/list", "/v1/auth/refresh"):
        answer = await client.request("POST", path, data=data)
        assert (answer[0], answer[1]["error_code"]) == (status, code), path


async def test_unknown_routes_and_methods_get_the_json_error_body(client):
    status, body = await client.request("GET", "/v1/nothing-here")
    assert status == 404 and set(body) == {"error_code", "message"}
    status, body = await client.request("PUT", "/v1/health")
    assert status == 405 and set(body) == {"error_code", "message"}


async def test_tickets_never_show_up_in_a_reattach_body(client):
    ticket = new_secret()
    made = await client.init(ticket=ticket)
    assert ticket not in str(made["body"])


async def test_the_rate_limit_answers_429_with_retry_after(tmp_path):
    limits = DEFAULT_LIMITS.model_copy(update={"rate_limit": 3})
    async with running_client(tmp_path, limits=limits) as client:
        for _ in range(3):
            assert (await client.request("GET", "/v1/health"))[0] == 200
        async with client.http.get(client.base + "/v1/health", headers=client.auth) as resp:
            assert resp.status == 429 and resp.headers["Retry-After"] == "1"
            assert (await resp.json())["error_code"] == "RATE_LIMITED"
        client.clock.advance(1)
        assert (await client.request("GET", "/v1/health"))[0] == 200
