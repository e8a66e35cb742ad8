"""Every row of the §4.1.5 and §4.1.6 validation tables, alone and together (K-05 precedence)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rawp.clock import iso
from rawp.config import LIMIT_FIELDS

# (field changed, bad value, field path reported, constraint, table code) — §4.1.5 rows.
LIMIT_ROWS = [
    ("rate_limit", 0, "limits.rate_limit", "POSITIVE_INTEGER", "INVALID_RATE_LIMIT"),
    ("rate_limit", -3, "limits.rate_limit", "POSITIVE_INTEGER", "INVALID_RATE_LIMIT"),
    ("rate_limit", 2.5, "limits.rate_limit", "POSITIVE_INTEGER", "INVALID_RATE_LIMIT"),
    ("rate_limit", 5.0, "limits.rate_limit", "POSITIVE_INTEGER", "INVALID_RATE_LIMIT"),
    ("rate_limit", "10", "limits.rate_limit", "POSITIVE_INTEGER", "INVALID_RATE_LIMIT"),
    ("rate_limit", True, "limits.rate_limit", "POSITIVE_INTEGER", "INVALID_RATE_LIMIT"),
    ("max_frame_size", 1023, "limits.max_frame_size", "MIN_VALUE:1024", "FRAME_SIZE_TOO_SMALL"),
    ("max_frame_size", "big", "limits.max_frame_size", "INTEGER", "FRAME_SIZE_TOO_SMALL"),
    ("reattach_window", -1, "limits.reattach_window", "MIN_VALUE:0", "INVALID_REATTACH_WINDOW"),
    ("reattach_window", 1.5, "limits.reattach_window", "INTEGER", "INVALID_REATTACH_WINDOW"),
    (
        "max_buffer_size",
        65535,
        "limits.max_buffer_size",
        "GTE:limits.max_frame_size",
        "BUFFER_SMALLER_THAN_FRAME",
    ),
    (
        "max_buffer_size",
        0,
        "limits.max_buffer_size",
        "POSITIVE_INTEGER",
        "BUFFER_SMALLER_THAN_FRAME",
    ),
    (
        "buffer_overflow_policy",
        "ring",
        "limits.buffer_overflow_policy",
        "ENUM:RING|DROP",
        "INVALID_OVERFLOW_POLICY",
    ),
    (
        "buffer_overflow_policy",
        None,
        "limits.buffer_overflow_policy",
        "ENUM:RING|DROP",
        "INVALID_OVERFLOW_POLICY",
    ),
]


@pytest.fixture
async def node(master):
    return await master.pair()


def _only(body: dict) -> dict:
    [item] = body["field_errors"]
    return item


async def test_each_limits_row_alone(master, node):
    # One app for all rows (rows as a loop keeps the suite fast); each row is named on failure.
    for name, value, path, constraint, code in LIMIT_ROWS:
        row = f"{name}={value!r}"
        response = await master.put(node, "limits", master.limits_body(**{name: value}))
        assert response.status_code == 422, row
        body = await response.get_json()
        assert body["error_code"] == code, row  # exactly one field failed (K-05)
        assert body["message"], row
        item = _only(body)
        assert (item["field"], item["constraint"], item["code"]) == (path, constraint, code), row
        assert item["reason"], row


async def test_boundary_values_are_accepted(master, node):
    body = master.limits_body(
        rate_limit=1, max_frame_size=1024, reattach_window=0, max_buffer_size=1024
    )
    body["limits"]["buffer_overflow_policy"] = "DROP"
    response = await master.put(node, "limits", body)
    assert response.status_code == 200, await response.get_json()


async def test_every_limits_violation_is_listed_together(master, node):
    body = master.limits_body(
        rate_limit=0,
        max_frame_size=10,
        reattach_window=-5,
        max_buffer_size=-1,
        buffer_overflow_policy="KEEP",
    )
    body["effective_at"] = iso(master.clock.now().replace(year=2030))
    body["config_version"] = 0
    response = await master.put(node, "limits", body)
    assert response.status_code == 422
    result = await response.get_json()
    assert result["error_code"] == "CONFIG_VALIDATION_FAILED"
    assert {(e["field"], e["code"]) for e in result["field_errors"]} == {
        ("config_version", "INVALID_CONFIG_VERSION"),
        ("effective_at", "EFFECTIVE_AT_IN_FUTURE"),
        ("limits.rate_limit", "INVALID_RATE_LIMIT"),
        ("limits.max_frame_size", "FRAME_SIZE_TOO_SMALL"),
        ("limits.reattach_window", "INVALID_REATTACH_WINDOW"),
        ("limits.max_buffer_size", "BUFFER_SMALLER_THAN_FRAME"),
        ("limits.buffer_overflow_policy", "INVALID_OVERFLOW_POLICY"),
    }


async def test_two_violations_use_the_generic_code(master, node):
    response = await master.put(
        node, "limits", master.limits_body(rate_limit=0, buffer_overflow_policy="X")
    )
    body = await response.get_json()
    assert body["error_code"] == "CONFIG_VALIDATION_FAILED"
    assert len(body["field_errors"]) == 2


async def test_effective_at_in_the_future(master, node):
    for seconds in (31, 3600):
        body = master.limits_body()
        body["effective_at"] = iso(master.clock.now() + timedelta(seconds=seconds))
        response = await master.put(node, "limits", body)
        assert response.status_code == 422, seconds
        item = _only(await response.get_json())
        assert (item["field"], item["code"]) == ("effective_at", "EFFECTIVE_AT_IN_FUTURE")


async def test_effective_at_within_the_tolerance_and_in_the_past(master, node):
    master.clock.advance(30)
    ahead = iso(master.clock.now())
    master.clock.advance(-30)
    for moment in (ahead, "2020-01-01T00:00:00Z", "2025-12-31T23:00:00+09:00"):
        body = master.limits_body(version=1)
        body["effective_at"] = moment
        response = await master.put(node, "limits", body)
        assert response.status_code == 200, moment


async def test_effective_at_not_iso(master, node):
    for value in ["yesterday", "", 1700000000, None, "2026-13-01T00:00:00Z"]:
        body = master.capabilities_body()
        body["effective_at"] = value
        response = await master.put(node, "capabilities", body)
        assert response.status_code == 422, value
        item = _only(await response.get_json())
        assert (item["field"], item["constraint"]) == ("effective_at", "ISO_8601"), value


async def test_config_version_must_be_a_positive_integer(master, node):
    for version in [0, -1, 1.5, "2", True, None]:
        body = master.limits_body()
        body["config_version"] = version
        response = await master.put(node, "limits", body)
        assert response.status_code == 422, version
        item = _only(await response.get_json())
        assert (item["field"], item["code"]) == ("config_version", "INVALID_CONFIG_VERSION")


async def test_each_missing_limit_field_is_400(master, node):
    for missing in LIMIT_FIELDS:
        body = master.limits_body()
        del body["limits"][missing]
        response = await master.put(node, "limits", body)
        assert response.status_code == 400, missing
        result = await response.get_json()
        assert result["error_code"] == "CONFIG_FIELD_MISSING"
        item = _only(result)
        assert (item["field"], item["code"]) == (f"limits.{missing}", "CONFIG_FIELD_MISSING")


async def test_all_missing_fields_are_listed_and_win_over_422(master, node):
    body = master.limits_body(rate_limit=0)  # also invalid: 400 still comes first (K-05)
    del body["limits"]["max_frame_size"], body["limits"]["reattach_window"]
    del body["effective_at"]
    response = await master.put(node, "limits", body)
    assert response.status_code == 400
    result = await response.get_json()
    assert result["error_code"] == "CONFIG_FIELD_MISSING"
    assert {e["field"] for e in result["field_errors"]} == {
        "effective_at",
        "limits.max_frame_size",
        "limits.reattach_window",
    }


async def test_missing_limits_object_lists_every_limit(master, node):
    body = master.limits_body()
    del body["limits"], body["config_version"]
    response = await master.put(node, "limits", body)
    result = await response.get_json()
    assert response.status_code == 400
    assert len(result["field_errors"]) == 6


async def test_limits_that_is_not_an_object_is_400(master, node):
    body = master.limits_body()
    body["limits"] = [1, 2]
    response = await master.put(node, "limits", body)
    assert response.status_code == 400
    assert (await response.get_json())["error_code"] == "INVALID_REQUEST"


# §4.1.6 rows: (capabilities, field path, table code)
CAPABILITY_ROWS = [
    ("vision_v1", "capabilities", "INVALID_CAPABILITIES_FORMAT"),
    ({"a": 1}, "capabilities", "INVALID_CAPABILITIES_FORMAT"),
    (None, "capabilities", "INVALID_CAPABILITIES_FORMAT"),
    ([""], "capabilities[0]", "INVALID_CAPABILITY_IDENTIFIER"),
    (["ok", "has space"], "capabilities[1]", "INVALID_CAPABILITY_IDENTIFIER"),
    (["x" * 129], "capabilities[0]", "INVALID_CAPABILITY_IDENTIFIER"),
    (["ünïcode"], "capabilities[0]", "INVALID_CAPABILITY_IDENTIFIER"),
    ([42], "capabilities[0]", "INVALID_CAPABILITY_IDENTIFIER"),
    (["a/b"], "capabilities[0]", "INVALID_CAPABILITY_IDENTIFIER"),
    (["vision_v1", "tool.call-2", "vision_v1"], "capabilities[2]", "DUPLICATE_CAPABILITY"),
]


async def test_each_capabilities_row_alone(master, node):
    for caps, path, code in CAPABILITY_ROWS:
        body = master.capabilities_body()
        body["capabilities"] = caps
        response = await master.put(node, "capabilities", body)
        assert response.status_code == 422, caps
        result = await response.get_json()
        assert result["error_code"] == code, caps
        item = _only(result)
        assert (item["field"], item["code"]) == (path, code), caps


async def test_valid_capabilities_are_accepted_even_unknown_ones(master, node):
    for version, caps in enumerate(
        [[], ["x" * 128], ["A.b-c_9", "a.B-c_9"], ["brand_new_feature_v9"]], start=1
    ):
        body = master.capabilities_body(version, capabilities=caps)
        response = await master.put(node, "capabilities", body)
        assert response.status_code == 200, caps
        held = await master.services.config.snapshots(node["node_id"])
        assert held["capabilities"].snapshot == caps  # stored as sent (M-CFG-17)


async def test_every_capabilities_violation_is_listed(master, node):
    body = master.capabilities_body(capabilities=["ok", "bad id", "ok", "", "ok"])
    body["effective_at"] = "soon"
    response = await master.put(node, "capabilities", body)
    result = await response.get_json()
    assert response.status_code == 422
    assert result["error_code"] == "CONFIG_VALIDATION_FAILED"
    assert [(e["field"], e["code"]) for e in result["field_errors"]] == [
        ("effective_at", "EFFECTIVE_AT_IN_FUTURE"),
        ("capabilities[1]", "INVALID_CAPABILITY_IDENTIFIER"),
        ("capabilities[2]", "DUPLICATE_CAPABILITY"),
        ("capabilities[3]", "INVALID_CAPABILITY_IDENTIFIER"),
        ("capabilities[4]", "DUPLICATE_CAPABILITY"),
    ]


async def test_missing_capabilities_is_400(master, node):
    body = master.capabilities_body()
    del body["capabilities"], body["config_version"]
    response = await master.put(node, "capabilities", body)
    result = await response.get_json()
    assert response.status_code == 400
    assert result["error_code"] == "CONFIG_FIELD_MISSING"
    assert {e["field"] for e in result["field_errors"]} == {"capabilities", "config_version"}


async def test_422_wins_over_409(master, node):
    assert (await master.put(node, "limits", master.limits_body(version=5))).status_code == 200
    response = await master.put(node, "limits", master.limits_body(version=3, rate_limit=0))
    assert response.status_code == 422
