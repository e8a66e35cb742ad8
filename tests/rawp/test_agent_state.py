"""The agent state table (DPS §4.6.1): its names, and the payload of one change."""

from typing import get_args

import pytest

from rawp import events
from rawp.agent_state import AgentState, change_payload


def test_the_table_names_the_states_the_payload_model_accepts():
    # The StateChanged model checks a Literal; the table and it must never drift apart.
    assert {state.value for state in AgentState} == set(get_args(events.AgentState))


def test_an_unknown_state_name_is_refused():
    with pytest.raises(ValueError):
        AgentState("sleeping")


def test_a_change_payload_names_the_state_left_and_plain_strings():
    payload = change_payload(AgentState.THINKING, AgentState.TOOL_CALLING)
    assert payload == {"previous_state": "thinking", "current_state": "tool_calling"}
    assert all(type(value) is str for value in payload.values())  # not the enum on the wire
    assert change_payload(None, AgentState.THINKING) == {"current_state": "thinking"}
    events.StateChanged.model_validate(payload)
