"""The live agents' setup says clearly why it cannot run when npm is missing."""

from __future__ import annotations

from tests.agents import conftest


def test_without_npm_the_skip_reason_names_npm_and_the_packages(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no npm on it
    reason = conftest._install()
    assert reason is not None and reason.startswith("npm is not installed")
    assert "@anthropic-ai/claude-code" in reason and "@zed-industries/claude-code-acp" in reason
