"""Choosing platforms with the web edge (rawp_app.launch, rawp_app.up): a comma-separated list,
the console alone or with web only, and `rawp up`'s web edge on unless turned off."""

from __future__ import annotations

import pytest

from rawp_app.launch import LaunchError, choose_platforms
from rawp_app.up import with_web

NO_TOKENS: dict[str, str] = {}


@pytest.mark.parametrize(
    "requested, chosen",
    [
        ("web", ("web",)),
        ("slack,web", ("slack", "web")),
        (("discord", "web", "discord"), ("discord", "web")),
        ("console, web", ("console", "web")),
        (None, ("console",)),
        ((), ("console",)),
    ],
)
def test_platforms_asked_for(requested, chosen):
    assert choose_platforms(requested, NO_TOKENS) == chosen


@pytest.mark.parametrize("requested", ["console,slack", "web,irc"])
def test_impossible_platforms_are_refused_in_one_line(requested):
    with pytest.raises(LaunchError) as refused:
        choose_platforms(requested, NO_TOKENS)
    assert "console" in str(refused.value) or "irc" in str(refused.value)


def test_the_web_edge_is_on_in_rawp_up_unless_turned_off():
    assert with_web(("console",), True) == ("console", "web")
    assert with_web(("slack",), True) == ("slack", "web")
    assert with_web(("web",), True) == ("web",)
    assert with_web(("console",), False) == ("console",)
    assert with_web(("web",), False) == ("console",)  # --no-web with web alone: the console
