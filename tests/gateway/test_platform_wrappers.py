"""The platforms that wrap an adapter's (budget, redaction, metrics) stand in for it completely:
no public method of `ChatPlatform` answers through a wrapper with the base class's default, so
a default never answers in place of the adapter's override (a Discord press forwarded from
another replica went to the base class's prompt-board key once), and what the adapter declares
reads the same through it."""

from __future__ import annotations

import inspect

import pytest

from gateway.metrics import PlatformOpMetrics
from gateway.platform import ChatPlatform
from gateway.redaction.redacting_platform import RedactingPlatform
from gateway.replicas.budgeted_platform import BudgetedPlatform

PUBLIC_METHODS = sorted(
    name
    for name, member in inspect.getmembers(ChatPlatform, inspect.isfunction)
    if not name.startswith("_")
)


@pytest.mark.parametrize("wrapper", [BudgetedPlatform, RedactingPlatform, PlatformOpMetrics])
def test_no_public_method_is_a_chat_platform_default(wrapper):
    assert "where_of" in PUBLIC_METHODS and "send_keyed" in PUBLIC_METHODS
    inherited = [n for n in PUBLIC_METHODS if getattr(wrapper, n) is getattr(ChatPlatform, n)]
    assert inherited == [], f"{wrapper.__name__} inherits ChatPlatform defaults: {inherited}"
