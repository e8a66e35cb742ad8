"""The session life cycle (RAWP §5), as one table.

Rules:

1. A session starts in INIT when `session/init` accepts it (§5.1) and its ticket is issued.
2. The first WebSocket bound with that ticket makes it RUNNING (§5.3).
3. When the socket drops, a session with `reattach_window > 0` becomes DETACHED and its agent
   keeps running; with a window of 0 it is TERMINATED at once (§4.1.5).
4. A reattach within the window makes a DETACHED session RUNNING again (A-14 adds the arrow).
5. DELETE, the end of the reattach window, an INIT ticket that is never used, or the agent
   ending for good make any session TERMINATED. TERMINATED is final.

Anything not in the table is refused with `IllegalTransition`, a programming error — callers
check `can()` where a peer's timing can race them.

6. Every event leads to one state (`target`), whatever it starts from, so a writer that shares
   the state with others (a database row several master replicas write, issue 14 §5) names
   the event and moves the row only from `predecessors(event)` — a conditional write, never
   an assignment. TERMINATED has no way out, so it stays final whichever replica writes last.
"""

from __future__ import annotations

from enum import StrEnum


class SessionState(StrEnum):
    INIT = "INIT"
    RUNNING = "RUNNING"
    DETACHED = "DETACHED"
    TERMINATED = "TERMINATED"


class SessionEvent(StrEnum):
    ATTACH = "attach"  # a WebSocket bound the session (first time or reattach)
    DETACH = "detach"  # the WebSocket dropped and the window is open
    TERMINATE = "terminate"  # DELETE, window expired, ticket unused, agent gone


S, E = SessionState, SessionEvent

TRANSITIONS: dict[tuple[SessionState, SessionEvent], SessionState] = {
    (S.INIT, E.ATTACH): S.RUNNING,
    (S.INIT, E.TERMINATE): S.TERMINATED,
    (S.RUNNING, E.DETACH): S.DETACHED,
    (S.RUNNING, E.TERMINATE): S.TERMINATED,
    (S.DETACHED, E.ATTACH): S.RUNNING,
    (S.DETACHED, E.TERMINATE): S.TERMINATED,
}

# States that count as "active" for §4.1.5 `active_sessions_affected` and §4.2 `busy`.
ACTIVE_STATES = frozenset({S.RUNNING, S.DETACHED})


class IllegalTransition(RuntimeError):
    def __init__(self, state: SessionState, event: SessionEvent) -> None:
        super().__init__(f"a {state} session cannot {event}")
        self.state = state
        self.event = event


def can(state: SessionState, event: SessionEvent) -> bool:
    return (state, event) in TRANSITIONS


def next_state(state: SessionState, event: SessionEvent) -> SessionState:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalTransition(state, event) from None


def predecessors(event: SessionEvent) -> frozenset[SessionState]:
    """The states from which `event` is allowed (rule 6): a conditional write's WHERE."""
    return frozenset(state for state, on in TRANSITIONS if on is event)


def target(event: SessionEvent) -> SessionState:
    """The one state `event` leads to (rule 6)."""
    (state,) = {after for (_, on), after in TRANSITIONS.items() if on is event}
    return state
