"""The REST bodies both sides use (rawp.rest): unknown keys ignored (§1.3), strict types, and
what is sent reads back as the same model."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from rawp.rest import (
    ClientCredentials,
    CreateSession,
    NodeInfo,
    NodeList,
    PairRequest,
    SessionCreated,
    TokenGrant,
)

text = st.text(min_size=1, max_size=40)


@given(
    node_id=text,
    device_name=text,
    status=st.sampled_from(["online", "busy", "offline"]),
    count=st.integers(min_value=0, max_value=10_000),
    capabilities=st.none() | st.lists(text, max_size=5),
    limits=st.none() | st.integers(min_value=1, max_value=99),
)
def test_a_node_listing_reads_back_as_sent(
    node_id, device_name, status, count, capabilities, limits
):
    sent = NodeList(
        nodes=[
            NodeInfo(
                node_id=node_id,
                device_name=device_name,
                status=status,
                last_seen="2026-12-01T09:30:00.000Z",
                active_sessions_count=count,
                config_versions={"limits": limits},
                capabilities=capabilities,
            )
        ]
    )
    assert NodeList.model_validate(sent.wire()) == sent
    assert "capabilities" not in sent.wire()["nodes"][0] or capabilities is not None


def test_unknown_keys_are_ignored_and_absent_optionals_are_left_out():
    body = CreateSession.model_validate({"agent_name": "claude", "color": "blue"})
    assert body.wire() == {"agent_name": "claude"}  # no "workspace_path": null on the wire
    grant = TokenGrant.model_validate({"access_token": "a", "refresh_token": "r", "new": 1})
    assert grant.server_credentials is None and grant.node_id is None


@pytest.mark.parametrize(
    "body",
    [
        {"agent_name": ""},  # empty
        {"agent_name": 7},  # not a string
        {"agent_name": "x" * 201},
        {"agent_name": "claude", "workspace_path": ""},
    ],
)
def test_a_bad_request_is_refused_not_coerced(body):
    with pytest.raises(ValidationError):
        CreateSession.model_validate(body)


def test_nested_bodies_validate_their_parts():
    good = {
        "pairing_token": "t",
        "client_address": "http://127.0.0.1:8080",
        "device_name": "laptop",
        "client_credentials": {"access_token": "a", "refresh_token": "r", "expires_in": 900},
    }
    assert PairRequest.model_validate(good).client_credentials == ClientCredentials(
        access_token="a", refresh_token="r", expires_in=900
    )
    with pytest.raises(ValidationError):
        PairRequest.model_validate({**good, "client_credentials": {"access_token": "a"}})
    with pytest.raises(ValidationError):  # "900" is not an integer (strict)
        ClientCredentials.model_validate({"access_token": "a", "refresh_token": "r",
                                          "expires_in": "900"})  # fmt: skip


def test_a_created_session_is_a_ticket_grant_with_its_state():
    created = SessionCreated.model_validate(
        {
            "session_id": "s1",
            "edge_ws_ticket": "tk",
            "ticket_expires_in": 60,
            "status": "RUNNING",
            "pinned_config_versions": {"limits": 1, "capabilities": 2},
        }
    )
    assert created.edge_ws_ticket == "tk" and created.pinned_config_versions.capabilities == 2
