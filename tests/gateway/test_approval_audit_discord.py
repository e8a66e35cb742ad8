"""Approvals with a record (issue 15 §4), end to end: a real master and client (processes, the
demo agent), the real `rawp gateway` process against the fake Discord, a short approval
timeout. A stranger's press is refused, a member of the approver role is accepted, a prompt
nobody answers is denied at expiry — and each is in the master's audit log, with who, what and
when, through the Edge API (the owner's only) and through `rawp master audit`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest

from rawp.clock import parse_iso
from tests.edge.stack import EDGE_SECRET, running_stack, user_token
from tests.fakes.discord_payloads import DiscordWorld, command_option, member, user
from tests.fakes.discord_server import FakeDiscord

WORLD = DiscordWorld()
# bob owns the machine and starts the turns; alice holds the approver role; carol is nobody.
WORLD.carol = user(WORLD.ids.next(), "carol")
WORLD.members[WORLD.carol["id"]] = member(WORLD.carol, [])
OWNER = f"discord:{WORLD.bob['id']}"
# Long enough for turn 1's two presses on a loaded machine, short enough for turn 2 to expire.
APPROVAL_TIMEOUT_S = 12


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with running_stack(tmp_path_factory.mktemp("audit-stack"), OWNER) as made:
        yield made


def content(call) -> str:
    return str((call.body or {}).get("content") or "")


def button(call, label: str) -> dict:
    rows = (call.body or {}).get("components") or []
    return next(b for row in rows for b in row.get("components", []) if b.get("label") == label)


async def audit_of(master_url: str, subject: str) -> list[dict]:
    token = await user_token(master_url, subject)
    async with (
        aiohttp.ClientSession() as http,
        http.get(
            f"{master_url}/v1/edge/audit", headers={"Authorization": f"Bearer {token}"}
        ) as response,
    ):
        assert response.status == 200, await response.text()
        return (await response.json())["records"]


async def records_of(master_url: str, subject: str, count: int, wait_s: float = 30.0):
    """The subject's audit records once there are `count` of them (or what is there at the
    deadline, for the assertion to show)."""
    deadline = asyncio.get_running_loop().time() + wait_s
    while True:
        records = await audit_of(master_url, subject)
        if len(records) >= count or asyncio.get_running_loop().time() > deadline:
            return records
        await asyncio.sleep(0.2)


async def test_refused_accepted_and_expired_approvals_are_on_record(stack, processes, tmp_path):
    began = datetime.now(UTC) - timedelta(seconds=1)
    async with FakeDiscord(WORLD) as discord_fake:
        env = {
            "RAWP_EDGE_SECRET": EDGE_SECRET,
            "DISCORD_BOT_TOKEN": WORLD.bot_token,
            "DISCORD_API_BASE_URL": discord_fake.api_base_url,
            "DISCORD_GATEWAY_URL": discord_fake.gateway_url,
            "DISCORD_APPROVER_ROLES": WORLD.operator_role_id,
            "SLACK_BOT_TOKEN": "",
            "RAWP_PLATFORM": "",
        }
        processes.rawp(
            "gateway", "--master-url", stack.master_url, "--state-dir", str(tmp_path / "gw"),
            "--workspace", str(stack.root), "--approval-timeout", str(APPROVAL_TIMEOUT_S),
            env=env, stdout=(tmp_path / "gateway.log").open("ab"),
        )  # fmt: skip
        await discord_fake.wait_for_ready_client(timeout=60)
        await discord_fake.wait_for_call("PUT", "/applications/*/commands", timeout=30)
        start = await discord_fake.inject_slash_command(
            "rawp",
            [
                {
                    "type": 1,
                    "name": "start",
                    "options": [
                        command_option("node", "test-box"),
                        command_option("agent", "demo"),
                    ],
                }
            ],
            user_payload=WORLD.bob,
        )
        made = await discord_fake.wait_for_call("POST", "/channels/*/threads", timeout=60)
        thread = made.response["id"]
        await discord_fake.wait_for_call(
            "POST", f"/webhooks/{WORLD.application_id}/{start['token']}", timeout=30
        )
        messages = f"/channels/{thread}/messages"

        # Turn 1: carol presses Allow and is refused; alice, an approver, presses Allow.
        await discord_fake.inject_message(
            "please approve this", channel_id=thread, author=WORLD.bob
        )
        question = await discord_fake.wait_for_call(
            "POST", messages, where=lambda c: "Apply the change" in content(c), timeout=60
        )
        allow = button(question, "Allow once")["custom_id"]
        carols = await discord_fake.inject_button(
            allow, message=question.response, user_payload=WORLD.carol
        )
        refusal = await discord_fake.wait_for_call(
            "POST",
            f"/webhooks/{WORLD.application_id}/{carols['token']}",
            where=lambda c: "Only the person" in content(c),
            timeout=30,
        )
        assert refusal.body["flags"] & 64  # ephemeral: only carol sees it
        await discord_fake.inject_button(allow, message=question.response, user_payload=WORLD.alice)
        await discord_fake.wait_for_call(
            "POST", messages, where=lambda c: "You chose: allow" in content(c), timeout=60
        )

        # Turn 2: nobody answers; the gateway denies at its configured timeout and says so.
        await discord_fake.inject_message("approve once more", channel_id=thread, author=WORLD.bob)
        second = await discord_fake.wait_for_call(
            "POST",
            messages,
            where=lambda c: "Apply the change" in content(c),
            timeout=60,
            count=2,
        )
        closed = await discord_fake.wait_for_call(
            "PATCH",
            f"{messages}/{second.response['id']}",
            where=lambda c: "⏱ No answer in 12 s — denied." in content(c),
            timeout=60,
        )
        assert not closed.body.get("components")  # the buttons are gone
        await discord_fake.wait_for_call(
            "POST", messages, where=lambda c: "You chose: deny" in content(c), timeout=60
        )

    # The gateway reports an outcome after the chat was answered (gateway.approvals.interactions
    # rule 6): the expiry's record may land a moment after its "You chose: deny" post.
    records = await records_of(stack.master_url, OWNER, count=3)
    ended = datetime.now(UTC) + timedelta(seconds=1)
    assert [r["outcome"] for r in records] == ["expired", "answered", "refused"]
    expired, answered, refused = records
    assert refused["actor"] == f"discord:{WORLD.carol['id']}"
    assert answered["actor"] == f"discord:{WORLD.alice['id']}"
    assert expired["actor"] is None
    assert [r["option_id"] for r in records] == ["deny", "allow", "allow"]
    assert [r["option_label"] for r in records] == ["Deny", "Allow once", "Allow once"]
    assert "denied by the gateway" in expired["detail"]
    for record in records:
        assert record["platform"] == "discord" and record["user_id"] == OWNER
        assert record["interaction_id"] == "approve-1"
        assert record["tool_name"] == "Edit" and record["input_preview"] == '{"path":"src/app.py"}'
        assert began <= parse_iso(record["recorded_at"]) <= ended
    # The records are bob's: neither the approver nor the stranger sees them.
    assert await audit_of(stack.master_url, f"discord:{WORLD.alice['id']}") == []
    assert await audit_of(stack.master_url, f"discord:{WORLD.carol['id']}") == []

    # The operator's view reads the same database.
    state = stack.master_args[stack.master_args.index("--state-dir") + 1]
    listed = await master_audit(state, "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == {"records": records}
    table = (await master_audit(state, "--user", OWNER, "--limit", "2")).stdout.splitlines()
    assert len(table) == 3 and table[0].startswith("TIME (UTC)")
    assert table[1].split()[1:3] == ["expired", "-"]
    assert table[2].split()[1:3] == ["answered", f"discord:{WORLD.alice['id']}"]


async def master_audit(state: str, *args: str) -> subprocess.CompletedProcess:
    """`rawp master audit` as a process, in a thread so the test's loop keeps running."""
    argv = [sys.executable, "-m", "rawp_app.cli", "master", "--state-dir", state, "audit", *args]
    return await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, timeout=60)
