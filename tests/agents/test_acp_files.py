"""ACP `fs/read_text_file` / `fs/write_text_file` (RAWP §7.2): a real child process (the fake
ACP agent) asks the client for files over stdio; the client answers through `PathGuard` and the
async, size-capped helpers of `client.files.fs`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from client.agents.acp import FILE_MAX_BYTES
from client.files.fs import FileTooLarge, read_text, write_text
from tests.agents.wire import drive, of, open_session, write_agents_file
from tests.client.harness import running_client

HERE = Path(__file__).parent
OUTSIDE = {"code": -32602, "reason": "outside the workspace"}


def fs(method: str, **params) -> dict:
    return {"fs": {"method": f"fs/{method}", "params": params}}


def answers(frames: list[dict]) -> list[dict]:
    """The fake's report of each fs answer, in order (consecutive chunks share one text)."""
    text = "".join(p["text"] for p in of(frames, "agent.text.done"))
    decoder, out = json.JSONDecoder(), []
    for piece in text.split("[fs: ")[1:]:
        out.append(decoder.raw_decode(piece)[0])
    return out


def refusal(answer: dict) -> dict:
    error = answer["error"]
    return {"code": error["code"], "reason": error["data"]["reason"]}


async def test_the_agent_reads_and_writes_only_confined_paths_within_the_cap(tmp_path):
    transcript = tmp_path / "fs.json"
    command = [sys.executable, str(HERE / "fake_acp.py"), str(transcript)]
    agents = write_agents_file(
        tmp_path, f'[agents.f]\nkind = "acp"\ncommand = {json.dumps(command)}\n'
    )
    secret = tmp_path / "outside.txt"
    secret.write_text("not for agents\n")
    async with running_client(tmp_path, agents_file=agents) as client:
        ws_dir = client.workspace.resolve()
        (ws_dir / "a.txt").write_text("one\ntwo\nthree\n")
        (ws_dir / "big.txt").write_bytes(b"line\n" * (FILE_MAX_BYTES // 5 + 1))
        (ws_dir / "link.txt").symlink_to(secret)
        requests = [
            fs("read_text_file", path=str(ws_dir / "a.txt")),
            fs("read_text_file", path=str(ws_dir / "a.txt"), line=2, limit=1),
            fs("read_text_file", path=str(secret)),
            fs("read_text_file", path=str(ws_dir / "link.txt")),
            fs("read_text_file", path=str(ws_dir / "a.txt") + "\x00.png"),
            fs("read_text_file", path=f"{ws_dir}/..%2f{secret.name}"),
            fs("read_text_file", path=str(ws_dir / "big.txt")),
            fs("read_text_file", path=str(ws_dir / "big.txt"), line=2, limit=1),
            fs("write_text_file", path=str(ws_dir / "new/b.txt"), content="written\n"),
            fs("write_text_file", path=f"{ws_dir}/sub%2f..%2f..%2fescape.txt", content="x"),
            fs(
                "write_text_file", path=str(ws_dir / "huge.txt"), content="y" * (FILE_MAX_BYTES + 1)
            ),
        ]
        turn = {"updates": requests, "response": {"stopReason": "end_turn"}}
        transcript.write_text(json.dumps({"turns": [turn]}))
        sid, ws = await open_session(client, "f")
        frames = await drive(ws, sid, "files")
        written = (ws_dir / "new/b.txt").read_text()
        assert not (ws_dir / "huge.txt").exists()
        assert not (tmp_path / "escape.txt").exists()

    got = answers(frames)
    assert len(got) == len(requests)
    assert got[0] == {"result": {"content": "one\ntwo\nthree\n"}}
    assert got[1] == {"result": {"content": "two\n"}}
    # Outside, through a link, with NUL or a percent-encoded separator: the same ACP error.
    assert [refusal(a) for a in got[2:6]] == [OUTSIDE] * 4
    assert got[6]["error"]["code"] == -32602
    assert f"{FILE_MAX_BYTES} bytes" in got[6]["error"]["data"]["reason"]
    assert got[7] == {"result": {"content": "line\n"}}  # a slice of a larger file is fine
    assert got[8] == {"result": {}} and written == "written\n"
    assert refusal(got[9]) == OUTSIDE
    assert f"{FILE_MAX_BYTES} bytes" in got[10]["error"]["data"]["reason"]
    assert "not for agents" not in json.dumps(frames)


async def test_reads_are_capped_even_for_one_endless_line(tmp_path):
    path = tmp_path / "one_line.txt"
    path.write_text("z" * 100)
    assert await read_text(path, max_bytes=100) == "z" * 100
    with pytest.raises(FileTooLarge):
        await read_text(path, max_bytes=99)
    with pytest.raises(FileTooLarge):
        await read_text(path, max_bytes=99, line=1, limit=1)
    path.write_text("é" * 50 + "\n" + "short\n")  # the cap counts UTF-8 bytes, not characters
    assert await read_text(path, max_bytes=107) == "é" * 50 + "\nshort\n"
    with pytest.raises(FileTooLarge):
        await read_text(path, max_bytes=106)  # 57 characters, 107 bytes
    assert await read_text(path, max_bytes=101, line=2) == "short\n"


async def test_writes_are_capped_and_create_parents(tmp_path):
    target = tmp_path / "a" / "b.txt"
    await write_text(target, "é" * 5, max_bytes=10)
    assert target.read_text() == "é" * 5
    with pytest.raises(FileTooLarge):
        await write_text(target, "é" * 6, max_bytes=11)
    assert target.read_text() == "é" * 5  # a refused write leaves the file as it was
