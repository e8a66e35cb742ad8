"""Every error is `{error_code, message}` (§7.1): bad JSON, wrong types, big bodies, 404/405, 500.

Also the §7.1 `429` + `Retry-After` budgets, timed by the fake clock.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quart import Blueprint

from rawp.clock import FakeClock
from rawp.errors import TooManyRequests
from runtime.rate_limit import Budget, MemoryRateLimiter


def _is_error_body(body) -> bool:
    return isinstance(body, dict) and {"error_code", "message"} <= set(body)


@pytest.fixture
async def node(master):
    return await master.pair()


BAD_JSON = [b"", b"{", b"[1, 2]", b'"text"', b"null", b"\xff\xfe", b"{'a': 1}"]


@pytest.mark.parametrize(
    "path",
    [
        "/v1/nodes/config/limits",
        "/v1/nodes/config/capabilities",
        "/v1/nodes/config",
        "/v1/auth/pair",
        "/v1/auth/refresh",
    ],
)
async def test_malformed_json_is_400(master, node, path):
    put = path.startswith("/v1/nodes/config/")
    method = master.client.put if put else master.client.post
    for raw in BAD_JSON:
        response = await method(
            path, data=raw, headers={**master.bearer(node), "Content-Type": "application/json"}
        )
        assert response.status_code == 400, raw
        body = await response.get_json()
        assert body["error_code"] == "INVALID_JSON", raw
        assert "Traceback" not in body["message"]


async def test_oversize_body_is_413(make_master):
    async with make_master(max_body_bytes=2048) as master:
        node = await master.pair()
        body = master.capabilities_body(capabilities=[f"cap_{i:04d}" for i in range(400)])
        response = await master.put(node, "capabilities", body)
        assert response.status_code == 413
        assert (await response.get_json())["error_code"] == "PAYLOAD_TOO_LARGE"
        pair = await master.client.post("/v1/auth/pair", data=b"{" + b" " * 5000 + b"}")
        assert pair.status_code == 413
        assert _is_error_body(await pair.get_json())


async def test_unknown_route_and_wrong_method(master):
    missing = await master.client.get("/v1/nothing-here")
    assert missing.status_code == 404
    assert (await missing.get_json())["error_code"] == "NOT_FOUND"
    wrong = await master.client.get("/v1/nodes/config/limits")
    assert wrong.status_code == 405
    assert (await wrong.get_json())["error_code"] == "METHOD_NOT_ALLOWED"
    assert "PUT" in wrong.headers["Allow"]


async def test_an_unexpected_exception_is_a_500_without_a_trace(make_master, caplog):
    async with make_master() as master:
        boom = Blueprint("boom", __name__)

        @boom.get("/boom")
        async def explode():
            raise RuntimeError("secret internals at line 42")

        master.app.register_blueprint(boom)
        response = await master.client.get("/boom")
    assert response.status_code == 500
    body = await response.get_json()
    assert body["error_code"] == "INTERNAL_ERROR"
    assert "secret internals" not in body["message"] and "Traceback" not in body["message"]
    assert any("secret internals" in (r.exc_text or "") for r in caplog.records)


# Arbitrary JSON values in every field of a limits update: the answer is always a clear
# 200/400/409/422 with the §7.1 body — never a 500.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.dictionaries(
        st.sampled_from(["config_version", "effective_at", "limits", "capabilities", "reason"]),
        json_values,
    )
)
async def test_any_json_gets_a_clear_answer(master, node, body):
    for scope in ("limits", "capabilities"):
        response = await master.put(node, scope, body)
        assert response.status_code in (200, 400, 409, 422)
        if response.status_code != 200:
            assert _is_error_body(await response.get_json())


async def test_node_budget_gives_429_with_retry_after(make_master, clock):
    async with make_master(node_rate_limit="3/s") as master:
        node = await master.pair()
        for version in (1, 2, 3):
            assert (
                await master.put(node, "limits", master.limits_body(version))
            ).status_code == 200
        limited = await master.put(node, "limits", master.limits_body(4))
        assert limited.status_code == 429
        assert limited.headers["Retry-After"] == "1"
        assert (await limited.get_json())["error_code"] == "RATE_LIMITED"
        other = await master.pair("discord:2")  # another node has its own budget
        assert (await master.put(other, "limits", master.limits_body(1))).status_code == 200
        clock.advance(1)
        assert (await master.put(node, "limits", master.limits_body(4))).status_code == 200


async def test_pair_and_refresh_are_limited_per_remote_address(make_master, clock):
    async with make_master(auth_rate_limit="2/min") as master:
        here = {"client": ("203.0.113.5", 40000)}
        there = {"client": ("198.51.100.7", 40000)}
        for _ in range(2):
            response = await master.client.post(
                "/v1/auth/refresh", json={"refresh_token": "x"}, scope_base=here
            )
            assert response.status_code == 401
        limited = await master.client.post(
            "/v1/auth/pair", json={"pairing_token": "x"}, scope_base=here
        )
        assert limited.status_code == 429
        assert int(limited.headers["Retry-After"]) == 30  # one more in half a minute
        elsewhere = await master.client.post(
            "/v1/auth/refresh", json={"refresh_token": "x"}, scope_base=there
        )
        assert elsewhere.status_code == 401
        clock.advance(30)
        again = await master.client.post(
            "/v1/auth/refresh", json={"refresh_token": "x"}, scope_base=here
        )
        assert again.status_code == 401


async def test_memory_limiter_refills_and_bounds_retry_after():
    clock = FakeClock()
    limiter = MemoryRateLimiter(clock)
    budget = Budget(per_second=2.0, burst=2)
    await limiter.hit("k", budget)
    await limiter.hit("k", budget)
    with pytest.raises(TooManyRequests) as info:
        await limiter.hit("k", budget)
    assert info.value.retry_after == pytest.approx(0.5)
    assert info.value.headers["Retry-After"] == "1"
    clock.advance(0.5)
    await limiter.hit("k", budget)


@pytest.mark.parametrize(
    ("text", "per_second", "burst"),
    [("20/s", 20.0, 20), ("10/min", 10 / 60, 10), ("600/h", 600 / 3600, 600), ("0.5/s", 0.5, 1)],
)
def test_budget_parse(text, per_second, burst):
    budget = Budget.parse(text)
    assert budget.per_second == pytest.approx(per_second)
    assert budget.burst == burst


@pytest.mark.parametrize("text", ["20", "x/s", "-1/s", "0/s", "5/fortnight", ""])
def test_budget_parse_refuses_nonsense(text):
    with pytest.raises(ValueError):
        Budget.parse(text)
