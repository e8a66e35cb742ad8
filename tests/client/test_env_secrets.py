"""The workspace's `.env` values leave the client only as fingerprints (client.sessions.env_secrets,
issue 15 §3): which files are read, which values count, and that a real client's
`session.capabilities` carries them and never a value."""

from __future__ import annotations

import pytest

from client.sessions.env_secrets import env_files, secret_fingerprints
from rawp.fingerprints import fingerprint, new_salt
from tests.client.harness import recv, running_client

VALUE = "tq84-Lmv0-Zr2x-Wa71"
LOCAL = "local-only-Secret-77"


def test_dotenv_and_its_variants_are_read_but_not_the_examples(tmp_path):
    for name in (".env", ".env.local", ".env.production", ".env.example", ".env.sample"):
        (tmp_path / name).write_text("A=1\n")
    (tmp_path / ".envrc").write_text("export A=1\n")
    names = [p.name for p in env_files(tmp_path)]
    assert names == [".env", ".env.local", ".env.production"]


def test_only_values_long_enough_are_fingerprinted_and_none_is_sent(tmp_path):
    (tmp_path / ".env").write_text(f'DEBUG=true\nPORT=8080\nDB_PASSWORD="{VALUE}"\n')
    (tmp_path / ".env.local").write_text(f"export API_KEY={LOCAL}\n")
    salt = new_salt()
    found = secret_fingerprints(tmp_path, salt)
    assert found is not None
    assert set(found.hashes) == {fingerprint(VALUE, salt), fingerprint(LOCAL, salt)}
    assert sorted(found.lengths) == sorted({len(VALUE), len(LOCAL)})
    assert VALUE not in found.model_dump_json() and LOCAL not in found.model_dump_json()


def test_a_workspace_without_dotenv_sends_nothing(tmp_path):
    assert secret_fingerprints(tmp_path, new_salt()) is None


@pytest.fixture
async def client(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWP_DEMO_PAUSE", "0")
    async with running_client(tmp_path) as running:
        yield running


async def test_the_capabilities_frame_carries_the_fingerprints(client):
    (client.workspace / ".env").write_text(f"DB_PASSWORD={VALUE}\n")
    _, ws = await client.start_session()
    caps = await recv(ws)
    assert caps["type"] == "session.capabilities"
    found = caps["payload"]["secret_fingerprints"]
    assert found["hashes"] == [fingerprint(VALUE, found["salt"])]
    assert VALUE not in str(caps)
