"""runtime.logs: JSON lines carry the request and session ids bound where they apply, and no line
carries a hidden value, a ticket, a token or a bearer credential."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import string
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime import logs

SECRET_CHARS = string.ascii_letters + string.digits + "-_"


@pytest.fixture
def json_log():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    logger = logging.getLogger("rawp.test.logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield logger, lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        logger.removeHandler(handler)


def test_a_line_names_the_ids_bound_around_it(json_log):
    logger, lines = json_log
    logger.info("outside")
    with logs.bound(request_id="req-1"), logs.bound(session_id="sess-1"):
        logger.warning("inside %s", "both")
        with logs.bound(session_id="sess-2"):
            logger.info("nested")
    logger.info("after")
    out, inside, nested, after = lines()
    assert "request_id" not in out and "session_id" not in out
    assert inside == {**inside, "level": "warning", "message": "inside both"}
    assert (inside["request_id"], inside["session_id"]) == ("req-1", "sess-1")
    assert (nested["request_id"], nested["session_id"]) == ("req-1", "sess-2")
    assert "session_id" not in after
    assert {"ts", "level", "logger", "message"} <= set(out)


async def test_a_task_started_for_a_session_keeps_naming_it(json_log):
    logger, lines = json_log

    async def work() -> None:
        logs.bind_session("sess-task")
        await asyncio.sleep(0)
        logger.info("in the task")

    await asyncio.create_task(work())
    logger.info("the caller")
    task_line, caller = lines()
    assert task_line["session_id"] == "sess-task" and "session_id" not in caller


def test_tracebacks_are_scrubbed_too(json_log):
    logger, lines = json_log
    logs.hide("hidden-credential-42")
    try:
        raise RuntimeError("failed with hidden-credential-42 and ?ticket=abc123")
    except RuntimeError:
        logger.exception("boom")
    (line,) = lines()
    assert "hidden-credential-42" not in json.dumps(line) and "abc123" not in line["exc"]


@given(
    secret=st.text(SECRET_CHARS, min_size=6, max_size=60),
    before=st.text(max_size=40),
    after=st.text(max_size=40),
)
def test_a_hidden_value_never_survives(secret, before, after):
    logs.hide(secret)
    assert secret not in logs.scrub(before + secret + after)


@given(value=st.text(SECRET_CHARS, min_size=4, max_size=80).map("Q9".__add__), name=st.sampled_from(
    ["ticket", "edge_ws_ticket", "token", "access_token", "refresh_token", "secret",
     "client_secret", "password", "TOKEN"]
))  # fmt: skip
def test_named_values_are_masked_in_urls_and_key_values(value, name):
    for text in (
        f"GET /v1/edge/ws/stream?session_id=x&{name}={value}&last=1",
        f"{name}={value}",
        f'{{"{name}": "{value}"}}',
        f"{name}: {value}",
    ):
        scrubbed = logs.scrub(text)
        assert f"{name}" in scrubbed and logs.MASK in scrubbed
        assert value not in scrubbed


def test_bearer_credentials_and_ordinary_words():
    assert logs.scrub("Authorization: Bearer abcdefgh12345") == "Authorization: Bearer …"
    assert logs.scrub("Bot MTIzNDU2Nzg5.abc") == "Bot …"
    plain = "session 4f0c: DETACHED (client link dropped); input_tokens=5"
    assert logs.scrub(plain) == plain


def test_configure_refuses_an_unknown_format():
    with pytest.raises(ValueError, match="text, json"):
        logs.configure("xml")


def test_credentials_in_the_environment_are_hidden():
    logs.hide_environment(
        {
            "RAWP_EDGE_SECRET": "edge-secret-value-1",
            "SLACK_BOT_TOKEN": "xoxb-1-2-3",
            "HOME": "/home",
        }
    )
    line = logs.scrub("talking to xoxb-1-2-3 with edge-secret-value-1 from /home")
    assert line == "talking to … with … from /home"


def test_text_lines_are_scrubbed_as_they_are_made():
    """Whatever handler a command installs, a record's message is scrubbed when it is made."""
    before = logging.getLogRecordFactory()
    try:
        logs.configure("text")
        logs.configure("text")  # once is enough: the factory is not wrapped twice
        record = logging.getLogger("rawp.test").makeRecord(
            "rawp.test", logging.INFO, __file__, 1, "opening %s", ("/ws?ticket=abc123",), None
        )
        assert record.getMessage() == "opening /ws?ticket=…"
        assert getattr(logging.getLogRecordFactory(), "scrubs", False)
    finally:
        logging.setLogRecordFactory(before)


def test_a_bad_log_format_is_one_line_and_help_still_works():
    env = {**os.environ, "RAWP_LOG_FORMAT": "xml"}
    run = [sys.executable, "-m", "rawp_app.cli", "gateway"]
    bad = subprocess.run(run, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines() == [
        "rawp gateway: RAWP_LOG_FORMAT: expected one of text, json, got 'xml'"
    ]
    helped = subprocess.run([*run, "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "--log-format" in helped.stdout
