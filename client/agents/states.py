"""One agent's current state, reported as `agent.state.changed` on each change (DPS §4.6.1).

Every agent kind (Claude Code, ACP, OpenAI-compatible) tracks its state here, so the rule of
`rawp.agent_state` — report a change once, with the state it left; a repeat is no change —
lives in one place. A tracker lasts one turn: a turn's first report has no `previous_state`.
"""

from __future__ import annotations

from client.agents.base import Emit
from rawp.agent_state import AgentState, change_payload


class AgentStates:
    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.current: AgentState | None = None

    async def set(self, state: AgentState) -> None:
        # AgentState() refuses a name DPS §4.6.1 does not define, before anything is sent.
        state = AgentState(state)
        if state == self.current:
            return
        previous, self.current = self.current, state
        await self.emit("agent.state.changed", change_payload(previous, state))
