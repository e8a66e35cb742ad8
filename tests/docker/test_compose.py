"""compose.yaml (issue 17 §4): master, gateway, PostgreSQL and Redis, each with a restart
policy and a health check, each started once what it needs is healthy, the master's port on
loopback only, and master and gateway configured as the README's `docker run` lines are. The
file is read here without an engine; tests/docker/test_docker_image.py has Debian's compose
tool check it and create the master and gateway containers from it where an engine runs."""

from __future__ import annotations

import re

import yaml

from tests.support import ROOT

COMPOSE = yaml.safe_load((ROOT / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]


def test_four_services_that_restart_and_are_health_checked():
    assert set(SERVICES) == {"master", "gateway", "postgres", "redis"}
    for name, service in SERVICES.items():
        assert service["restart"] == "unless-stopped", name
    assert SERVICES["postgres"]["healthcheck"]["test"][0] == "CMD-SHELL"
    assert SERVICES["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]
    # master and gateway run the image's own HEALTHCHECK (its test is not replaced here)
    assert "HEALTHCHECK" in (ROOT / "Dockerfile").read_text()
    for name in ("master", "gateway"):  # only sooner than the image's 30 s
        assert "test" not in SERVICES[name]["healthcheck"]
        assert SERVICES[name]["healthcheck"]["interval"] == "10s"
    # The master may wait RAWP_DATABASE_WAIT (60 s) for PostgreSQL before it listens: not
    # unhealthy meanwhile, or compose refuses to start the gateway (issue 34 §2).
    assert int(SERVICES["master"]["healthcheck"]["start_period"].rstrip("s")) > 60


def test_each_service_waits_for_what_it_needs():
    healthy = {"condition": "service_healthy"}
    assert SERVICES["master"]["depends_on"] == {"postgres": healthy, "redis": healthy}
    assert SERVICES["gateway"]["depends_on"] == {"master": healthy}


def test_master_and_gateway_are_the_readmes_containers():
    master, gateway = SERVICES["master"], SERVICES["gateway"]
    # loopback only, behind the TLS proxy; the host's port a variable (issue 34 §4)
    assert master["ports"] == ["127.0.0.1:${RAWP_PUBLISHED_PORT:-8700}:8700"]
    assert "ports" not in gateway and "command" not in master
    assert gateway["command"] == ["gateway"]
    assert master["env_file"] == gateway["env_file"] == ".env"
    assert master["volumes"] == ["master:/data"] and gateway["volumes"] == ["gateway:/data"]
    env = master["environment"]
    assert env["RAWP_MASTER_HOST"] == "0.0.0.0"
    # Issue 34 §3: the password is never pasted into the URL, where @ / # ? : % break it.
    assert env["RAWP_DATABASE_URL"] == "postgresql+asyncpg://rawp@postgres:5432/rawp"
    assert env["RAWP_DATABASE_PASSWORD"].startswith("${RAWP_POSTGRES_PASSWORD:?")
    assert env["RAWP_REDIS_URL"] == "redis://redis:6379/0"
    assert gateway["environment"] == {
        "RAWP_MASTER_URL": "http://master:8700",
        "RAWP_HEALTHCHECK_URL": "http://master:8700/v1/health",
    }
    readme = (ROOT / "README.md").read_text()
    assert "-e RAWP_MASTER_URL=http://rawp-master:8700" in readme
    assert "-e RAWP_HEALTHCHECK_URL=http://rawp-master:8700/v1/health rawp gateway" in readme


def test_no_secret_is_written_into_the_file():
    """Secrets come from .env (kept out of git), never from the file."""
    text = (ROOT / "compose.yaml").read_text()
    assert "${RAWP_POSTGRES_PASSWORD:?" in text  # compose refuses to start without one
    for name, service in SERVICES.items():
        for key, value in (service.get("environment") or {}).items():
            assert not re.search(r"SECRET|TOKEN|PASSWORD", key) or "${" in str(value), (name, key)
        assert "RAWP_EDGE_SECRET" not in (service.get("environment") or {}), name
