"""The platforms that wrap an adapter's (budget, redaction) stand in for it completely: each
public method of `ChatPlatform` is the wrapper's own, so a base-class default never answers in
place of the adapter's override (a Discord press forwarded from another replica went to the
base class's prompt-board key once), and what the adapter declares reads the same through it."""

from __future__ import annotations

import inspect

import pytest

from gateway.platform import ChatPlatform
from gateway.redaction.redacting_platform import RedactingPlatform
from gateway.replicas.budgeted_platform import BudgetedPlatform

PUBLIC_METHODS = sorted(
    name
    for name, member in inspect.getmembers(ChatPlatform, inspect.isfunction)
    if not name.startswith("_")
)


@pytest.mark.parametrize("wrapper", [BudgetedPlatform, RedactingPlatform])
def test_every_public_method_is_the_wrappers_own(wrapper):
    assert "where_of" in PUBLIC_METHODS and "send_keyed" in PUBLIC_METHODS
    inherited = [name for name in PUBLIC_METHODS if name not in wrapper.__dict__]
    assert inherited == [], f"{wrapper.__name__} inherits ChatPlatform defaults: {inherited}"
