"""`rawp client` stopped by SIGTERM while the master holds a session's WebSocket to it (issue 34
§4): it exits 0 with one line saying it stops, and logs no ERROR nor traceback (the web server's
shutdown cancelling its connections is not an error)."""

from __future__ import annotations

import socket

import pytest

from tests.edge.stack import demo_session, edge_for, recv, start_stack

OWNER = "discord:3401"


@pytest.fixture
def stack(processes, tmp_path):
    made = start_stack(processes, tmp_path, OWNER)
    made.start_client()
    yield made
    made.proxy.close()


async def test_sigterm_with_a_live_session_is_a_clean_stop(stack):
    async with edge_for(stack.master_url, OWNER) as edge:
        _, _, ws = await demo_session(edge, stack.root)
        assert (await recv(ws))["type"] == "session.capabilities"

        stack.client_proc.terminate()
        assert stack.client_proc.wait(timeout=30) == 0
        said = stack.client_output()
    assert "ERROR" not in said and "Traceback" not in said, said
    assert "CancelledError" not in said, said
    assert said.count("rawp client stopped") == 1, said


@pytest.mark.parametrize("host", ["127.0.0.1", "192.0.2.1"])  # in use; not this machine's
def test_an_address_it_cannot_listen_on_is_one_line_and_no_listening_claim(
    processes, tmp_path, host
):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = processes.rawp(
            "client", "--dev", "--host", host, "--port", str(port),
            "--state-dir", str(tmp_path / "state"),
        )  # fmt: skip
        said = proc.communicate(timeout=60)[0].decode()
    assert proc.returncode not in (0, None), said
    assert f"could not listen on {host}:{port}" in said, said
    assert "Traceback" not in said and "listening on" not in said, said
