"""The one state tracker every agent kind reports `agent.state.changed` through (DPS §4.6.1)."""

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from client.agents.states import AgentStates
from rawp.agent_state import AgentState
from rawp.events import StateChanged


class Recorder:
    def __init__(self) -> None:
        self.frames: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, event_type: str, payload: dict[str, Any]) -> None:
        self.frames.append((event_type, payload))


async def test_a_change_is_reported_once_with_the_state_it_left():
    emit = Recorder()
    states = AgentStates(emit)
    await states.set(AgentState.THINKING)
    await states.set(AgentState.TOOL_CALLING)
    assert emit.frames == [
        ("agent.state.changed", {"current_state": "thinking"}),
        ("agent.state.changed", {"previous_state": "thinking", "current_state": "tool_calling"}),
    ]
    assert states.current is AgentState.TOOL_CALLING


async def test_the_same_state_twice_reports_nothing():
    emit = Recorder()
    states = AgentStates(emit)
    await states.set(AgentState.THINKING)
    await states.set(AgentState.THINKING)
    assert len(emit.frames) == 1


async def test_an_unknown_state_is_refused_and_nothing_is_sent():
    emit = Recorder()
    states = AgentStates(emit)
    await states.set(AgentState.IDLE)
    with pytest.raises(ValueError):
        await states.set("sleeping")  # type: ignore[arg-type]
    assert len(emit.frames) == 1
    assert states.current is AgentState.IDLE


@given(st.lists(st.sampled_from(list(AgentState)), max_size=30))
def test_any_sequence_of_states_gives_a_consistent_chain(sequence):
    emit = Recorder()
    states = AgentStates(emit)

    async def run() -> None:
        for state in sequence:
            await states.set(state)

    asyncio.run(run())
    payloads = [payload for _, payload in emit.frames]
    # One frame per change, none for a repeat.
    changes = [s for i, s in enumerate(sequence) if i == 0 or s != sequence[i - 1]]
    assert [p["current_state"] for p in payloads] == changes
    previous = None
    for payload in payloads:
        StateChanged.model_validate(payload)  # every frame is a valid DPS payload
        assert payload.get("previous_state") == previous
        assert payload["current_state"] != previous
        previous = payload["current_state"]
