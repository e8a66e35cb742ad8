"""Error bodies (RAWP §7.1, §4.1.7) and the session life-cycle table (RAWP §5)."""

import pytest

from rawp import errors
from rawp.session_state import (
    ACTIVE_STATES,
    TRANSITIONS,
    IllegalTransition,
    SessionEvent,
    SessionState,
    can,
    next_state,
    predecessors,
    target,
)


@pytest.mark.parametrize(
    "cls, status",
    [
        (errors.BadRequest, 400),
        (errors.Unauthorized, 401),
        (errors.Forbidden, 403),
        (errors.NotFound, 404),
        (errors.Conflict, 409),
        (errors.Unprocessable, 422),
        (errors.UpgradeRequired, 426),
        (errors.InternalError, 500),
        (errors.ServiceUnavailable, 503),
        (errors.PayloadTooLarge, 413),
    ],
)
def test_error_classes_carry_status_and_body(cls, status):
    err = cls("something went wrong", "SOME_CODE")
    assert err.status == status
    assert err.to_body() == {"error_code": "SOME_CODE", "message": "something went wrong"}
    assert cls("m").to_body()["error_code"] == cls.default_code


def test_config_error_extras_are_in_the_body():
    err = errors.Conflict("stale", "CONFIG_VERSION_CONFLICT", current_config_version=7)
    assert err.to_body() == {
        "error_code": "CONFIG_VERSION_CONFLICT",
        "message": "stale",
        "current_config_version": 7,
    }
    fe = [{"field": "limits.rate_limit", "constraint": "POSITIVE_INTEGER", "reason": "r"}]
    assert errors.Unprocessable("bad", field_errors=fe).to_body()["field_errors"] == fe


@pytest.mark.parametrize("retry_after, header", [(0.0, "1"), (0.2, "1"), (1.0, "1"), (2.5, "3")])
def test_too_many_requests_sets_retry_after(retry_after, header):
    err = errors.TooManyRequests("slow down", retry_after)
    assert err.status == 429
    assert err.headers == {"Retry-After": header}


def test_session_life_cycle():
    S, E = SessionState, SessionEvent
    assert next_state(S.INIT, E.ATTACH) is S.RUNNING
    assert next_state(S.RUNNING, E.DETACH) is S.DETACHED
    assert next_state(S.DETACHED, E.ATTACH) is S.RUNNING
    for state in (S.INIT, S.RUNNING, S.DETACHED):
        assert next_state(state, E.TERMINATE) is S.TERMINATED
    for event in E:
        assert not can(S.TERMINATED, event)
        with pytest.raises(IllegalTransition):
            next_state(S.TERMINATED, event)
    assert not can(S.INIT, E.DETACH)
    assert {S.RUNNING, S.DETACHED} == ACTIVE_STATES
    assert all(target in S for target in TRANSITIONS.values())


def test_each_event_names_its_predecessors_and_its_one_target():
    S, E = SessionState, SessionEvent
    assert predecessors(E.ATTACH) == {S.INIT, S.DETACHED}  # RUNNING is not re-attached
    assert predecessors(E.DETACH) == {S.RUNNING}  # an INIT or TERMINATED row stays
    assert predecessors(E.TERMINATE) == {S.INIT, S.RUNNING, S.DETACHED}
    assert (target(E.ATTACH), target(E.DETACH), target(E.TERMINATE)) == (
        S.RUNNING,
        S.DETACHED,
        S.TERMINATED,
    )
    for event in E:  # the helpers agree with the table, and nothing leaves TERMINATED
        assert S.TERMINATED not in predecessors(event)
        for state in S:
            assert can(state, event) == (state in predecessors(event))
            if can(state, event):
                assert next_state(state, event) is target(event)
