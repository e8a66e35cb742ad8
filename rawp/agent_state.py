"""The agent's states (DPS §4.6.1), as one table.

Rules:

1. An agent is in one of five states: `idle`, `thinking`, `tool_calling`, `awaiting_input`,
   `error` (DPS §4.6.1; requirements R-05). Any other name is refused (`AgentState(name)`
   raises `ValueError`).
2. `agent.state.changed` reports a change: `current_state` is the new state, `previous_state`
   the one it left, absent on a turn's first report. The same state twice is no change and
   is not reported.
3. DPS §4.6.1 names no forbidden arrows — its example is `idle → thinking → tool_calling →
   thinking → idle` — so any state may follow any other; only a repeat is not a transition.

`rawp.events.AgentState` is the same five names as the `Literal` the payload model checks;
tests/rawp/test_agent_state.py keeps the two in step.
"""

from __future__ import annotations

from enum import StrEnum


class AgentState(StrEnum):
    IDLE = "idle"
    THINKING = "thinking"
    TOOL_CALLING = "tool_calling"
    AWAITING_INPUT = "awaiting_input"
    ERROR = "error"


def change_payload(previous: AgentState | None, current: AgentState) -> dict[str, str]:
    """The `agent.state.changed` payload for one change (rule 2); plain strings on the wire."""
    payload = {"current_state": current.value}
    if previous is not None:
        payload["previous_state"] = previous.value
    return payload
