"""`rawp doctor` (issue 17 §3) against a real master, a real gateway and the fake Discord and
Slack: a healthy deployment is all ✅ and exit 0; a wrong Discord token, a stopped master, a
missing agent binary, a wrong edge secret and a switched-off intent are each a ❌ line with its
fix, and exit 1."""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rawp_app.doctor import diagnose
from rawp_app.doctor.platform_checks import MANIFEST_SCOPES
from rawp_app.doctor.settings import DoctorSettings
from tests.fakes.discord_payloads import DiscordWorld
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack
from tests.support import ROOT, Processes, free_port, missing_service, wait_for_http

SECRET = "doctor-edge-secret-0123456789abcdef"


def doctor(env: dict[str, str], *args: str) -> tuple[int, list[str]]:
    result = subprocess.run(
        [sys.executable, "-m", "rawp_app.cli", "doctor", *args],
        capture_output=True, text=True, timeout=60, env=env, cwd=ROOT,
    )  # fmt: skip
    assert result.stderr == "", result.stderr
    return result.returncode, result.stdout.splitlines()


def failures(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("❌")]


@pytest.fixture
def master(tmp_path):
    processes = Processes()
    port = free_port()
    proc = processes.rawp(
        "master", "--dev", "--port", str(port), "--state-dir", str(tmp_path / "m"),
        env={"RAWP_EDGE_SECRET": SECRET}, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_for_http(url + "/v1/health", proc=proc, timeout=30)
    try:
        yield processes, proc, url
    finally:
        processes.close()


def checked_with(master_url: str, env: dict[str, str]) -> tuple[DoctorSettings, dict[str, str]]:
    """Doctor's settings and the platforms' variables, both from `env`, as `rawp doctor` reads
    them."""
    return DoctorSettings.from_environment({"master_url": master_url}, env), env


async def test_a_healthy_deployment_is_all_green_and_each_fault_is_a_red_line_with_its_fix(
    master, tmp_path
):
    processes, master_proc, master_url = master
    world = DiscordWorld()
    async with FakeDiscord(world) as fake:
        import os

        env = {
            **os.environ,
            "RAWP_MASTER_URL": master_url,
            "RAWP_EDGE_SECRET": SECRET,
            "DISCORD_BOT_TOKEN": world.bot_token,
            "DISCORD_API_BASE_URL": fake.api_base_url,
            "DISCORD_GATEWAY_URL": fake.gateway_url,
            "SLACK_BOT_TOKEN": "",
            "RAWP_PLATFORM": "",
            "RAWP_AGENTS_FILE": "",
            "RAWP_DATABASE_URL": "",
            "RAWP_REDIS_URL": "",
        }
        # The real gateway registers /rawp, as it does in a deployment.
        processes.rawp(
            "gateway", "--state-dir", str(tmp_path / "gw"), env=env, stdout=subprocess.DEVNULL
        )
        await fake.wait_for_call("PUT", "/applications/*/commands", timeout=60)

        code, lines = await asyncio.to_thread(doctor, env)
        assert code == 0, lines
        assert failures(lines) == []
        joined = "\n".join(lines)
        assert re.search(rf"✅ master {master_url} answers: rawp \d", joined), joined
        assert "✅ the master accepts RAWP_EDGE_SECRET" in joined
        assert "✅ Discord accepts the bot token" in joined
        assert "✅ the needed privileged intents are on" in joined
        assert "✅ the /rawp command is registered" in joined
        assert "✅ agent 'demo'" in joined
        assert lines[-1] == "all checks passed"
        assert world.bot_token not in joined and SECRET not in joined

        # A wrong Discord token, a wrong edge secret and an agent whose program is missing.
        agents = tmp_path / "agents.toml"
        agents.write_text(
            '[agents.coder]\nkind = "script"\ncommand = ["rawp-no-such-agent-binary"]\n'
            '[agents.claude]\nkind = "claude-code"\ncommand = ["/nonexistent/claude"]\n'
        )
        broken = {
            **env,
            "DISCORD_BOT_TOKEN": "not-the-token",
            "RAWP_EDGE_SECRET": "not-the-secret-00000000000000000",
            "RAWP_AGENTS_FILE": str(agents),
        }
        code, lines = await asyncio.to_thread(doctor, broken)
        assert code == 1
        bad = failures(lines)
        assert any(
            "refused DISCORD_BOT_TOKEN (401" in line and "fix: copy the bot token again" in line
            for line in bad
        ), lines
        assert any(
            "refused RAWP_EDGE_SECRET (HTTP 401" in line and "same RAWP_EDGE_SECRET" in line
            for line in bad
        ), lines
        assert any(
            "'rawp-no-such-agent-binary' is not on PATH" in line and "fix: install" in line
            for line in bad
        ), lines
        assert any(
            "'/nonexistent/claude'" in line and "npm install -g @anthropic-ai/claude-code" in line
            for line in bad
        ), lines
        assert lines[-1] == f"{len(lines) - 1 - len(bad)} passed, {len(bad)} failed"
        assert "not-the-token" not in "\n".join(lines)

        # The Message Content intent switched off in the portal.
        world.application_flags = 0
        found = await diagnose(*checked_with(master_url, env), None)
        assert [f.what for f in found if not f.ok] == ["privileged intents off: Message Content"]

        # The master stopped.
        master_proc.terminate()
        master_proc.wait(timeout=30)
        code, lines = await asyncio.to_thread(doctor, env, "--no-agents")
        assert code == 1
        assert failures(lines)[0].startswith(f"❌ master {master_url} did not answer (")
        assert "fix: start the master (`rawp master`" in failures(lines)[0]


async def test_slack_tokens_and_scopes_are_checked_at_the_configured_endpoint(tmp_path):
    async with FakeSlack() as slack:
        env = {
            "SLACK_BOT_TOKEN": slack.world.bot_token,
            "SLACK_APP_TOKEN": slack.world.app_token,
            "SLACK_API_BASE_URL": slack.api_base_url,
        }
        dead = f"http://127.0.0.1:{free_port()}"
        found = [
            f for f in await diagnose(*checked_with(dead, env), None) if "master" not in f.what
        ]
        assert [f.line() for f in found] == [
            "✅ Slack accepts the bot token: rawp test",
            "✅ the bot token has every scope the manifest asks for",
            "✅ Slack accepts the app token (Socket Mode)",
        ]
        slack.world.bot_scopes = ("chat:write", "commands")
        found = await diagnose(*checked_with(dead, {**env, "SLACK_APP_TOKEN": "xapp-wrong"}), None)
        lines = [f.line() for f in found if not f.ok]
        assert any(
            line.startswith("❌ the bot token lacks scopes: reactions:write") for line in lines
        )
        assert any("refused SLACK_APP_TOKEN (invalid_auth)" in line for line in lines), lines
        found = await diagnose(*checked_with(dead, {**env, "SLACK_BOT_TOKEN": "xoxb-wrong"}), None)
        assert [f.what for f in found if "Slack" in f.what] == [
            f"Slack ({slack.api_base_url}) refused SLACK_BOT_TOKEN (invalid_auth)"
        ]


async def test_database_and_redis_that_do_not_answer_are_named_without_their_password():
    dead = free_port()
    env = {
        "RAWP_DATABASE_URL": f"postgresql+asyncpg://rawp:hunter2@127.0.0.1:{dead}/rawp",
        "RAWP_REDIS_URL": f"redis://:hunter2@127.0.0.1:{dead}/0",
    }
    found = await diagnose(*checked_with(f"http://127.0.0.1:{dead}", env), None)
    text = "\n".join(f.line() for f in found)
    assert "❌ database postgresql+asyncpg://rawp:***@127.0.0.1" in text
    assert "❌ Redis redis://:***@127.0.0.1" in text
    assert "hunter2" not in text


def test_the_scopes_checked_are_the_manifests():
    manifest = (ROOT / "adapters/slack/manifest.yaml").read_text()
    bot = manifest.split("bot:", 1)[1].split("settings:", 1)[0]
    listed = re.findall(r"^\s+- ([a-z_:.]+)", bot, flags=re.M)
    assert tuple(listed) == MANIFEST_SCOPES


def test_the_doctor_is_a_rawp_command():
    result = subprocess.run(
        [sys.executable, "-m", "rawp_app.cli", "doctor", "--help"],
        capture_output=True, text=True, timeout=60, cwd=Path(ROOT),
    )  # fmt: skip
    assert result.returncode == 0
    assert "--master-url" in result.stdout


def test_a_tls_certificate_that_does_not_verify_or_ends_soon_is_a_red_line(tmp_path):
    import os

    from tests.support import self_signed_certificate

    cert, key = self_signed_certificate(tmp_path)  # for 127.0.0.1, valid one day
    processes = Processes()
    port = free_port()
    try:
        proc = processes.rawp(
            "master", "--dev", "--port", str(port), "--state-dir", str(tmp_path / "m"),
            "--tls-cert", str(cert), "--tls-key", str(key),
            env={"RAWP_EDGE_SECRET": SECRET}, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        url = f"https://127.0.0.1:{port}"
        env = {**os.environ, "RAWP_EDGE_SECRET": SECRET, "DISCORD_BOT_TOKEN": "",
               "SLACK_BOT_TOKEN": "", "RAWP_DATABASE_URL": "", "RAWP_REDIS_URL": ""}  # fmt: skip
        deadline = time.monotonic() + 30
        while True:  # the master is up once its TLS port takes a connection
            assert proc.poll() is None, "the master exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the master never listened"
                time.sleep(0.1)
        code, lines = doctor(env, "--master-url", url, "--no-agents")
        assert code == 1
        assert failures(lines) == [
            f"❌ TLS certificate of 127.0.0.1:{port} does not verify (self-signed certificate) "
            "— fix: serve a certificate for this host name from a trusted CA with its full chain "
            "(RAWP_MASTER_TLS_CERT, or the proxy in front of the master)"
        ]
        # Trusted (as if a CA had signed it), it still ends tomorrow: renew it.
        code, lines = doctor(
            {**env, "SSL_CERT_FILE": str(cert)}, "--master-url", url, "--no-agents"
        )
        joined = "\n".join(lines)
        assert code == 1
        assert f"✅ master {url} answers" in joined
        assert "✅ the master accepts RAWP_EDGE_SECRET" in joined
        assert re.search(
            rf"❌ TLS certificate of 127.0.0.1:{port} expires in 0 days .* renew", joined
        )
    finally:
        processes.close()


async def test_an_sqlite_database_that_opens_is_green(tmp_path):
    sqlite = f"sqlite+aiosqlite:///{tmp_path / 'master.db'}"
    found = await diagnose(
        *checked_with(f"http://127.0.0.1:{free_port()}", {"RAWP_DATABASE_URL": sqlite}), None
    )
    assert [f.line() for f in found if "database" in f.what] == [f"✅ database {sqlite} answers"]


async def test_the_machines_postgresql_and_redis_are_green_where_they_answer():
    env = {
        "RAWP_DATABASE_URL": "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres",
        "RAWP_REDIS_URL": "redis://127.0.0.1:6379/0",
    }
    found = await diagnose(*checked_with(f"http://127.0.0.1:{free_port()}", env), None)
    services = [f for f in found if "master" not in f.what]
    if not all(f.ok for f in services):  # a missing external service is the only honest skip
        missing_service(f"PostgreSQL or Redis does not answer here: {[f.line() for f in services]}")
    assert [f.what for f in services] == [
        "database postgresql+asyncpg://postgres@127.0.0.1:5432/postgres answers",
        "Redis redis://127.0.0.1:6379/0 answers",
    ]
