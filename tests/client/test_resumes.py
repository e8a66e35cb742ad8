"""client.sessions.resumes: the one home of the agents' conversation ids (issue 30 §2)."""

from __future__ import annotations

import pytest

from client.sessions import resumes
from client.sessions.resumes import AgentSession, AgentSessions
from rawp.errors import Conflict, NotFound


def test_ids_survive_a_new_store_and_are_looked_up_for_their_agent_only(tmp_path):
    AgentSessions(tmp_path).remember("s1", "claude", "c-1", "/w")
    again = AgentSessions(tmp_path)  # a restarted client reads the file
    assert again.lookup("s1", "claude") == AgentSession("claude", "c-1", "/w")
    with pytest.raises(Conflict):
        again.lookup("s1", "other")
    with pytest.raises(NotFound):
        again.lookup("s2", "claude")


def test_the_oldest_go_first_and_an_unreadable_file_knows_none(tmp_path, monkeypatch):
    monkeypatch.setattr(resumes, "LIMIT", 2)
    store = AgentSessions(tmp_path)
    for n in range(3):
        store.remember(f"s{n}", "claude", f"c-{n}")
    assert list(AgentSessions(tmp_path).records) == ["s1", "s2"]
    (tmp_path / resumes.RECORD_FILE).write_text("{not json")
    assert AgentSessions(tmp_path).records == {}
