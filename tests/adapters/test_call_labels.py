"""adapters.call_labels: a platform call's metric label is its kind, never one of its values."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from adapters.call_labels import discord_route, slack_method

TOKENISH = st.text(string.ascii_letters + string.digits + "-_.%", min_size=8, max_size=90).filter(
    lambda t: any(c.isdigit() or c.isupper() or c == "%" for c in t)
)


def test_discord_routes_become_templates():
    assert discord_route("post", "/api/v10/channels/123/messages") == "POST /channels/{id}/messages"
    assert (
        discord_route("POST", "/api/v10/interactions/987/aW50ZXJhY3Rpb246OTg3/callback")
        == "POST /interactions/{id}/{id}/callback"
    )
    assert (
        discord_route("PATCH", "/api/v10/webhooks/55/tOkEn_x/messages/@original")
        == "PATCH /webhooks/{id}/{id}/messages/@original"
    )
    assert (
        discord_route("PUT", "/api/v10/channels/1/messages/2/reactions/%E2%9C%85/@me")
        == "PUT /channels/{id}/messages/{id}/reactions/{id}/@me"
    )


@given(secret=TOKENISH, words=st.lists(st.sampled_from(["channels", "messages", "threads"])))
def test_no_id_or_token_reaches_a_discord_label(secret, words):
    path = "/api/v10/" + "/".join([*words, secret, "callback"])
    assert secret not in discord_route("POST", path)


def test_slack_methods_are_their_names():
    assert slack_method("/api/chat.postMessage") == "chat.postMessage"
    assert slack_method("/api/assistant.threads.setStatus") == "assistant.threads.setStatus"
    assert slack_method("/api/xoxb-123-secret") == "other"
    assert slack_method("/files/T1/F2/secret.txt") == "other"


@given(secret=TOKENISH)
def test_no_token_reaches_a_slack_label(secret):
    label = slack_method(f"/api/{secret}")
    assert label == "other" or ("." in label and not any(c.isdigit() for c in label))
