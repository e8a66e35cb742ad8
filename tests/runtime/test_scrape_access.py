"""runtime.scrape_access: who may read /metrics."""

from __future__ import annotations

import pytest

from runtime.scrape_access import is_loopback, may_scrape


@pytest.mark.parametrize("address", ["127.0.0.1", "127.8.9.1", "::1", "[::1]"])
def test_loopback_peers_may_read_without_a_token(address):
    assert is_loopback(address) and may_scrape(address, {}, None)


@pytest.mark.parametrize("address", ["10.0.0.2", "192.168.1.1", "::ffff:8.8.8.8", "", None, "x"])
def test_other_peers_may_not(address):
    assert not may_scrape(address, {}, None)


def test_a_forwarded_request_is_not_a_loopback_peer():
    assert not may_scrape("127.0.0.1", {"X-Forwarded-For": "203.0.113.9"}, None)
    assert not may_scrape("127.0.0.1", {"Forwarded": "for=203.0.113.9"}, None)


def test_with_a_token_only_the_token_counts():
    token = "scrape-token-1234"
    assert not may_scrape("127.0.0.1", {}, token)
    assert not may_scrape("10.0.0.2", {"Authorization": "Bearer wrong"}, token)
    assert may_scrape("10.0.0.2", {"Authorization": f"Bearer {token}"}, token)
