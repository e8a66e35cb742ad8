"""Path confinement (RAWP §7.2, X-SEC-01): every network path is resolved, then refused
with 403 unless it lies inside an allowed root (and the session's workspace)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from client.files.paths import PathGuard
from rawp.errors import BadRequest, Forbidden
from tests.client.harness import frame, recv, recv_until, running_client


def build_tree(tmp: Path) -> dict[str, Path]:
    root, outside = tmp / "root", tmp / "outside"
    ws = root / "ws"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.txt").write_text("secret")
    (tmp / "rootx").mkdir()  # a sibling whose name starts with the root's name
    ws.mkdir(parents=True, exist_ok=True)
    (root / "other").mkdir()
    (ws / "ok.txt").write_text("fine")
    (ws / "out").symlink_to(outside)
    (ws / "abslink").symlink_to("/etc")
    (ws / "chain").symlink_to(ws / "out")
    (ws / "dotdotlink").symlink_to("../../outside")
    (ws / "secretlink").symlink_to(outside / "secret.txt")
    return {"tmp": tmp, "root": root, "ws": ws, "outside": outside}


def attacks(t: dict[str, Path]) -> list[str]:
    ws, root, tmp = str(t["ws"]), str(t["root"]), str(t["tmp"])
    return [
        "/etc",
        "/",
        "//etc",
        f"{ws}/../../outside",
        f"{root}/../outside",
        f"{root}/./../outside/.",
        f"{ws}/out",
        f"{ws}/out/",
        f"{ws}/out/sub",
        f"{ws}/chain",
        f"{ws}/abslink",
        f"{ws}/dotdotlink",
        f"{ws}/dotdotlink/sub",
        str(t["outside"]),
        tmp,
        f"{tmp}/rootx",
        "~",
        "~/",
        "~root",
        f"{ws}\x00",
        f"{ws}/\x00../..",
        f"{ws}%2f..%2f..%2foutside",
        f"{ws}%2F..%2F..",
        f"{ws}/..%5c..%5coutside",
        f"{ws}%00",
        f"{ws}/%2e%2e/%2e%2e/outside",
        f"{ws}\\..\\..\\outside",
        "%2e%2e/%2e%2e",
        "ws",
        "../outside",
        ".",
        f" {ws}",
        f"/proc/self/root{tmp}/outside",
        f"{ws}\n/../../..",
        ws.upper(),
        "/dev/null",
    ]


@pytest.fixture
async def client(tmp_path):
    tree = build_tree(tmp_path)
    async with running_client(tmp_path) as running:
        running.tree = tree
        yield running


async def test_at_least_thirty_path_attacks_on_fs_list_are_all_refused(client):
    cases = attacks(client.tree)
    assert len(cases) >= 30
    for target in cases:
        status, body = await client.request("POST", "/v1/fs/list", {"target_path": target})
        assert status == 403, (target, status, body)
        assert body["error_code"] == "PATH_FORBIDDEN" and body["message"]
    # The guard is not simply refusing everything: the workspace and a sibling root list.
    for good in (client.tree["ws"], client.tree["root"] / "other", client.tree["root"]):
        status, _ = await client.request("POST", "/v1/fs/list", {"target_path": str(good)})
        assert status == 200, good


async def test_workspace_path_attacks_are_refused_at_session_init(client):
    for target in attacks(client.tree):
        made = await client.init(workspace=target)  # type: ignore[arg-type]
        assert made["status"] == 403, (target, made)


async def test_file_references_outside_the_workspace_refuse_the_prompt(client):
    tree = client.tree
    sid, ws = await client.start_session()
    await recv(ws), await recv(ws)
    bad_paths = [
        "../../outside/secret.txt",
        "/etc/passwd",
        str(tree["outside"] / "secret.txt"),
        "out/secret.txt",
        "secretlink",
        "dotdotlink/secret.txt",
        "~/.ssh/id_rsa",
        "ok.txt\x00",
        "..%2f..%2foutside%2fsecret.txt",
        "../other",
    ]
    for path in bad_paths:
        refs = [{"ref_id": "ref_0", "path": path, "display_path": "x"}]
        request = frame(
            "control.prompt.request",
            {"prompt_text": "read <@file:ref_0|x>", "file_references": refs},
            sid,
        )
        await ws.send(request)
        reply = await recv(ws)
        assert reply["type"] == "session.error", (path, reply)
        assert reply["payload"]["code"] == "FILE_REFERENCE_FORBIDDEN", path
    # A good reference still runs, and reaches the agent as an argument.
    refs = [{"ref_id": "ref_0", "path": "ok.txt", "display_path": "ok.txt"}]
    await ws.send(
        frame(
            "control.prompt.request",
            {"prompt_text": "read <@file:ref_0|ok.txt>", "file_references": refs},
            sid,
        )
    )
    frames = await recv_until(ws, "session.turn.end")
    assert frames[0]["type"] == "session.turn.start"
    text = next(f for f in frames if f["type"] == "agent.text.done")["payload"]["text"]
    assert "- ok.txt" in text


SEGMENTS = st.sampled_from(
    ["..", ".", "ws", "out", "chain", "abslink", "dotdotlink", "ok.txt", "", "other", "sub"]
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segments=st.lists(SEGMENTS, max_size=8), absolute=st.booleans())
def test_property_whatever_resolves_lies_inside_the_root(tmp_path_factory, segments, absolute):
    tree = _tree(tmp_path_factory)
    guard = PathGuard([tree["root"]])
    raw = "/".join(segments)
    if absolute:
        raw = f"{tree['root']}/{raw}"
    try:
        real = guard.resolve(raw, workspace=tree["ws"], relative_to=tree["ws"])
    except (Forbidden, BadRequest):
        return
    ws_real = Path(os.path.realpath(tree["ws"]))
    assert real == ws_real or ws_real in real.parents


_TREES: dict[str, dict[str, Path]] = {}


def _tree(factory) -> dict[str, Path]:
    if "t" not in _TREES:
        _TREES["t"] = build_tree(factory.mktemp("guard"))
    return _TREES["t"]


async def test_context_files_outside_the_workspace_refuse_the_prompt(client):
    sid, ws = await client.start_session()
    await recv(ws), await recv(ws)
    for path in ("../other", "/etc/passwd", "out/secret.txt", "~/.bashrc"):
        await ws.send(
            frame(
                "control.prompt.request",
                {"prompt_text": "hi", "context_files": [{"path": path}]},
                sid,
            )
        )
        reply = await recv(ws)
        assert reply["payload"]["code"] == "FILE_REFERENCE_FORBIDDEN", path
