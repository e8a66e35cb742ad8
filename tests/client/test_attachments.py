"""Attachments on the client (client.files.attachments): saved confined, named safely, never
overwriting; and end to end through a script agent, which takes files but no images."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.agents import AgentsFileError, load_agents
from client.files.attachments import (
    MAX_NAME_BYTES,
    AttachmentRefused,
    check_attachments_dir,
    receive,
    safe_name,
    save_attachment,
)
from client.files.paths import PathGuard
from gateway.sessions.prompt import PromptDraft, PromptError
from rawp.events import Attachment
from tests.agents.wire import of, open_session, send_prompt, write_agents_file
from tests.client.harness import recv_until, running_client
from tests.images import PDF, attachment, tiny_png


@settings(max_examples=400, deadline=None)
@given(name=st.text(max_size=300))
def test_a_safe_name_is_one_plain_visible_file_name_the_guard_accepts(name, tmp_path_factory):
    clean = safe_name(name)
    assert clean and len(clean.encode()) <= MAX_NAME_BYTES
    assert "/" not in clean and "\\" not in clean and "\x00" not in clean and "%" not in clean
    assert not clean.startswith((".", "-"))
    assert all(c.isalnum() or c in "._-" for c in clean)
    root = tmp_path_factory.getbasetemp()
    assert PathGuard([root]).resolve(clean, workspace=root, relative_to=root) == root / clean


@pytest.mark.parametrize(
    ("given_name", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\bug report (2).PNG", "bug_report__2_.PNG"),
        (".env", "env"),
        ("...", "attachment"),
        ("-rf", "rf"),
        ("%2e%2e%2fx", "2e_2e_2fx"),
    ],
)
def test_names_are_sanitised(given_name, expected):
    assert safe_name(given_name) == expected


def test_a_file_is_never_overwritten_and_the_folder_stays_in_the_workspace(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    paths = [save_attachment(workspace, ".rawp/attachments", "a.txt", b"%d" % n) for n in range(3)]
    assert paths == [
        ".rawp/attachments/a.txt",
        ".rawp/attachments/a-1.txt",
        ".rawp/attachments/a-2.txt",
    ]
    assert [(workspace / p).read_bytes() for p in paths] == [b"0", b"1", b"2"]
    # A folder that is a link leading out of the workspace is refused, and nothing is written.
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, workspace / "drop")
    with pytest.raises(AttachmentRefused) as refused:
        save_attachment(workspace, "drop", "a.txt", b"x")
    assert refused.value.code == "ATTACHMENT_NOT_SAVED"
    assert not list(outside.iterdir())
    # A link planted where the file would go is not followed either.
    os.symlink(outside / "victim", workspace / ".rawp/attachments/b.txt")
    assert save_attachment(workspace, ".rawp/attachments", "b.txt", b"y").endswith("b-1.txt")
    assert not (outside / "victim").exists()


@pytest.mark.parametrize("bad", ["../up", "/abs", "", "a\\b"], ids=["up", "abs", "empty", "bs"])
def test_the_attachments_dir_setting_must_stay_inside_the_workspace(tmp_path, bad):
    with pytest.raises(ValueError, match="attachments_dir"):
        check_attachments_dir(bad)
    path = write_agents_file(
        tmp_path,
        f'[agents.s]\nkind = "script"\ncommand = ["true"]\nattachments_dir = {json.dumps(bad)}\n',
    )
    with pytest.raises(AgentsFileError, match="attachments_dir"):
        load_agents(path)


def test_the_client_checks_the_count_again():
    items = [Attachment(name=f"{n}.txt", mime_type="text/plain", data="eA==") for n in range(11)]
    with pytest.raises(AttachmentRefused, match="at most 10 attachments"):
        receive(items)
    assert [r.data for r in receive(items[:10])] == [b"x"] * 10


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(0, 600 * 1024), max_size=12))
def test_what_the_gateway_sends_the_client_accepts(sizes):
    """One set of limits: every prompt the gateway builds passes the client's own check."""
    draft = PromptDraft()
    draft.add_text("look")
    for n, size in enumerate(sizes):
        with contextlib.suppress(PromptError):
            draft.add_attachment(f"{n}.bin", "application/octet-stream", b"x" * size)
    request = draft.build()
    accepted = receive(request.attachments)
    assert [len(r.data) for r in accepted] == [
        len(base64.b64decode(a.data)) for a in request.attachments or []
    ]


ECHO = "import os, sys; print(json.dumps([sys.argv[1:], os.environ['RAWP_PROMPT']]))"


async def test_a_script_gets_a_pdf_and_an_image_as_files_and_the_user_hears_of_the_image(
    tmp_path,
):
    command = [sys.executable, "-c", "import json; " + ECHO]
    path = write_agents_file(
        tmp_path, f'[agents.echo]\nkind = "script"\ncommand = {json.dumps(command)}\n'
    )
    png = tiny_png()
    async with running_client(tmp_path, agents_file=path) as client:
        sid, ws = await open_session(client, "echo")
        await send_prompt(
            ws,
            sid,
            "summarise",
            attachments=[
                attachment("report.pdf", PDF, "application/pdf"),
                attachment("shot.png", png),
            ],
        )
        frames = await recv_until(ws, "session.turn.end")
        argv, text = json.loads("".join(p["text"] for p in of(frames, "agent.text.delta")))
        pdf, image = ".rawp/attachments/report.pdf", ".rawp/attachments/shot.png"
        assert argv == [pdf, image]
        assert text == f"summarise\n\nAttached: {pdf}\n\nAttached: {image}"
        assert (client.workspace / pdf).read_bytes() == PDF
        assert (client.workspace / image).read_bytes() == png
        assert [p["message"] for p in of(frames, "agent.error")] == [
            f"shot.png was not delivered: this agent takes no images; it was saved as {image} "
            "instead"
        ]
        # The same name again: a new file beside the first, which is left as it was.
        await send_prompt(ws, sid, "again", attachments=[attachment("report.pdf", b"%PDF-2")])
        frames = await recv_until(ws, "session.turn.end")
        argv, _ = json.loads("".join(p["text"] for p in of(frames, "agent.text.delta")))
        assert argv == [".rawp/attachments/report-1.pdf"]
        assert (client.workspace / pdf).read_bytes() == PDF
