"""The fakes' own helpers: path globs, the bounded wait, and Slack request signing."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest
from hypothesis import given
from hypothesis import strategies as st
from slack_sdk.signature import SignatureVerifier

from tests.fakes.calls import Call, CallLog, RateLimitPlan, path_matches
from tests.fakes.slack_signing import signed_request

segment = st.text(
    st.characters(codec="ascii", exclude_characters="/*", min_codepoint=33), min_size=1
)


@given(st.lists(segment, min_size=1, max_size=5), st.data())
def test_a_star_stands_for_exactly_one_segment(segments, data):
    path = "/" + "/".join(segments)
    starred = data.draw(st.integers(0, len(segments) - 1))
    pattern = "/" + "/".join("*" if i == starred else s for i, s in enumerate(segments))
    assert path_matches(pattern, path)
    assert not path_matches(pattern, path + "/extra")
    assert path_matches(pattern.rsplit("/", 1)[0] + "/**", path)


async def test_wait_for_call_names_what_it_saw_when_it_gives_up():
    log = CallLog()
    log.record(Call("GET", "/users/@me", None))
    with pytest.raises(TimeoutError, match=r"GET /users/@me → 200"):
        await log.wait_for_call("POST", "/channels/*/messages", 0.05)


async def test_wait_for_call_returns_the_nth_match_in_order():
    log = CallLog()
    for n in range(3):
        log.record(Call("POST", f"/channels/{n}/messages", {"n": n}))
    third = await log.wait_for_call("POST", "/channels/*/messages", 0.05, count=3)
    assert third.body == {"n": 2}


def test_rate_limit_plan_is_consumed_once_per_planned_429():
    plan = RateLimitPlan()
    plan.add("POST", "/channels/*/messages", times=2, retry_after=0.5)
    assert plan.take("POST", "/channels/1/messages").retry_after == 0.5
    assert plan.take("GET", "/channels/1/messages") is None
    assert plan.take("POST", "/channels/2/messages") is not None
    assert plan.take("POST", "/channels/1/messages") is None and plan.pending == 0


payloads = st.dictionaries(st.text(max_size=10), st.text(max_size=30), max_size=5)


@given(payloads, st.sampled_from(["event", "interactive", "slash_command"]))
def test_signed_requests_verify_with_slack_sdks_own_verifier(payload, kind):
    secret = "s3cret"
    request = signed_request(kind, payload, secret)
    verifier = SignatureVerifier(secret)
    assert verifier.is_valid_request(request.body, request.headers)
    assert not SignatureVerifier("other").is_valid_request(request.body, request.headers)
    assert not verifier.is_valid_request(request.body + b" ", request.headers)


@given(payloads)
def test_interactive_body_is_a_form_with_the_payload_json(payload):
    request = signed_request("interactive", payload, "s")
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    [encoded] = parse_qs(request.body.decode(), keep_blank_values=True)["payload"]
    assert json.loads(encoded) == payload


def test_any_verb_matches_http_calls_but_not_websocket_frames():
    assert Call("GET", "conversations.replies", None).matches("*", "conversations.*")
    assert Call("POST", "chat.postMessage", None).matches("*", "chat.postMessage")
    assert not Call("WS", "ack", None).matches("*", "ack")
    assert not Call("GET", "users.info", None).matches("POST", "users.info")
