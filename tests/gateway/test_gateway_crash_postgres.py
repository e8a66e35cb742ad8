"""The gateway killed mid-answer resumes from its store on PostgreSQL (issue 19 §1 with issue 14
§4): the cursor, the posts and the turn origins a restarted `rawp gateway` reads are the ones
the killed one wrote to the shared database, so every chunk is posted once, in order.

The same real processes as tests/gateway/test_gateway_crash.py (which runs 20 trials on the
SQLite file); here two kills, at fixed points (before the first chunk, in the middle), with
`--database-url` naming a fresh PostgreSQL database and no SQLite file made.
"""

from __future__ import annotations

import contextlib
import signal

import pytest

from gateway.store_db import Database
from gateway.store_schema import conversations
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.chat_stack import (
    content,
    discord_env,
    discord_ready,
    discord_start,
    gateway_args,
)
from tests.gateway.crash_support import expected_chunks, long_answer_stack
from tests.gateway.store_support import drop_postgres_database, fresh_postgres_database
from tests.support import Processes

pytestmark = pytest.mark.postgres
WORLD = DiscordWorld()
OWNER = f"discord:{WORLD.alice['id']}"


def posted_in(fake: FakeDiscord, thread_id: str) -> list[str]:
    """The content of every message made in the thread, once per message id."""
    seen: dict[str, str] = {}
    for call in fake.calls("POST", f"/channels/{thread_id}/messages"):
        if call.status == 200 and isinstance(call.response, dict):
            seen.setdefault(str(call.response["id"]), content(call))
    return list(seen.values())


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with long_answer_stack(tmp_path_factory.mktemp("crash-pg"), OWNER) as made:
        yield made


async def test_a_gateway_on_postgresql_killed_mid_answer_posts_every_chunk_once(stack, tmp_path):
    url, name = await fresh_postgres_database()
    processes = Processes()
    log = (tmp_path / "gateway.log").open("ab")
    try:
        async with FakeDiscord(WORLD) as fake:
            env = discord_env(fake, WORLD)
            args = gateway_args(stack, tmp_path, "--database-url", url)
            gateway = processes.rawp(*args, env=env, stdout=log)
            await discord_ready(fake)
            _, thread_id = await discord_start(fake, "long")
            await fake.wait_for_call("POST", f"/channels/{thread_id}/messages", timeout=30)
            identified = len(fake.calls("WS", "IDENTIFY"))
            for trial, where in enumerate(("first", "middle")):
                tag = f"P{trial}"
                want = expected_chunks(tag)
                kill_after = {"first": 0, "middle": len(want) // 2}
                kill_after = kill_after[where]
                before = len(posted_in(fake, thread_id))
                prompt = await fake.inject_message(f"answer trial {tag}", channel_id=thread_id)
                if kill_after:
                    await fake.wait_for_call(
                        "POST", f"/channels/{thread_id}/messages", count=kill_after,
                        where=lambda c, tag=tag: content(c).startswith(f"{tag}."),
                        timeout=60,
                    )  # fmt: skip
                else:
                    await fake.wait_for_call(
                        "PUT",
                        f"/channels/{thread_id}/messages/{prompt['id']}/reactions/⏳/@me",
                        timeout=60,
                    )  # fmt: skip
                gateway.send_signal(signal.SIGKILL)
                gateway.wait(timeout=30)
                gateway = processes.rawp(*args, env=env, stdout=log)
                identified += 1
                await fake.wait_for_call("WS", "IDENTIFY", count=identified, timeout=60)
                await fake.wait_for_ready_client(timeout=60)
                with contextlib.suppress(TimeoutError):  # the assertion says what came
                    await fake.wait_for_call(
                        "POST", f"/channels/{thread_id}/messages",
                        where=lambda c, tag=tag: content(c) == f"{tag} END", timeout=60,
                    )  # fmt: skip
                got = posted_in(fake, thread_id)[before:]
                answer = [t for t in got if t.startswith(f"{tag}.") or t == f"{tag} END"]
                assert answer == want, (
                    f"killed {where} ({kill_after} of {len(want)} chunks): "
                    f"missing {[w[:12] for w in want if w not in answer]}, "
                    f"repeated {sorted({a[:12] for a in answer if answer.count(a) > 1})}"
                )
            gateway.terminate()  # before the fake Discord goes away under it
            gateway.wait(timeout=30)
        assert not (tmp_path / "gw" / "conversations.sqlite3").exists()
        db = Database.open(url)
        try:  # the binding the restarted gateways found is the one in PostgreSQL
            async with db.read() as conn:
                bound = (await conn.execute(conversations.select())).mappings().all()
            assert [(row["thread_id"], row["subject"]) for row in bound] == [(thread_id, OWNER)]
        finally:
            await db.dispose()
    finally:
        processes.close()
        log.close()
        await drop_postgres_database(name)
