"""Models from chat (issue 30 §1) end to end: `control.model.set` → the kind → the real
`claude` CLI (its `set_model` control request, or `--model` for a CLI started later) and the
real Claude Code ACP adapter (`session/set_model`), each against the fake Anthropic API, whose
requests show the model chosen; and the fake ACP agent offering session config options
(`session/set_config_option`, `control.config.set`). A change is announced by a new
`session.capabilities`; a model the agent does not offer is a `session.error` naming the
ones it does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.agents.conftest import model_env
from tests.agents.fake_anthropic import FakeAnthropic, Turn, text
from tests.agents.test_modes import greeted, killed_and_reaped
from tests.agents.wire import drive, inline_table, of, write_agents_file
from tests.client.harness import frame, recv, running_client

FAKE_ACP = Path(__file__).parent / "fake_acp.py"
THOUGHT = {
    "id": "thought_level",
    "name": "Thinking",
    "category": "thought_level",
    "type": "select",
    "currentValue": "low",
    "options": [{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}],
}
MODEL = {
    "id": "model",
    "name": "Model",
    "category": "model",
    "type": "select",
    "currentValue": "fast-1",
    # Grouped, as the spec allows: the client flattens the groups.
    "options": [
        {"group": "small", "name": "Small", "options": [{"value": "fast-1", "name": "Fast"}]},
        {"group": "big", "name": "Big", "options": [{"value": "deep-2", "name": "Deep"}]},
    ],
}


@pytest.fixture
async def live(tmp_path, node_agents):
    transcript = tmp_path / "configured.json"
    turns = [{"updates": [], "response": {"stopReason": "end_turn"}} for _ in range(4)]
    transcript.write_text(json.dumps({"turns": turns, "config_options": [THOUGHT, MODEL]}))
    async with FakeAnthropic() as fake:
        env = model_env(fake.base_url, tmp_path / "home")
        path = write_agents_file(
            tmp_path,
            '[agents.claude]\nkind = "claude-code"\n'
            f"command = [{json.dumps(str(node_agents.claude))}]\nenv = {inline_table(env)}\n"
            'model = "claude-rawp-test"\n'
            '[agents.acp]\nkind = "acp"\n'
            f"command = {json.dumps(node_agents.acp)}\nenv = {inline_table(env)}\n"
            '[agents.configured]\nkind = "acp"\n'
            f"command = {json.dumps([sys.executable, str(FAKE_ACP), str(transcript)])}\n"
            '[agents.demo]\nkind = "script"\nmode = "jsonl"\n'
            f'command = [{json.dumps(sys.executable)}, "-m", "rawp_app.cli", "demo-agent"]\n',
        )
        async with running_client(tmp_path, agents_file=path) as client:
            yield client, fake


async def set_model(ws, sid: str, model: str) -> dict:
    """Send `control.model.set`; the answer: the new capabilities, or the error."""
    return await _answer(ws, frame("control.model.set", {"model": model}, sid))


async def _answer(ws, sent: str) -> dict:
    await ws.send(sent)
    while True:
        answer = await recv(ws, 90)
        if answer["type"] in ("session.capabilities", "session.error"):
            return answer


def last_model(fake: FakeAnthropic) -> str:
    return fake.main_requests()[-1]["model"]


async def test_claude_code_models_before_and_during_the_process(live):
    client, fake = live
    sid, ws, caps = await greeted(client, "claude")
    assert [m["id"] for m in caps["models"]] == ["sonnet", "opus", "haiku", "claude-rawp-test"]
    assert caps["current_model"] == "claude-rawp-test"
    # Before the CLI runs: the model is kept and the CLI starts with it (`--model`).
    changed = await set_model(ws, sid, "Opus")  # matched by name, as modes are
    assert changed["type"] == "session.capabilities"
    assert changed["payload"]["current_model"] == "opus"
    fake.script.append(Turn([text("Deep thoughts.")]))
    await drive(ws, sid, "think")
    assert "opus" in last_model(fake)
    # While it runs: the `set_model` control request switches the live CLI.
    changed = await set_model(ws, sid, "haiku")
    assert changed["payload"]["current_model"] == "haiku"
    fake.script.append(Turn([text("Quick.")]))
    frames = await drive(ws, sid, "again")
    assert "haiku" in last_model(fake)
    assert not of(frames, "session.capabilities")  # nothing else changed
    refused = await set_model(ws, sid, "gpt-9")
    assert refused["type"] == "session.error"
    assert refused["payload"]["code"] == "INVALID_MODEL"
    assert "sonnet, opus, haiku, claude-rawp-test" in refused["payload"]["message"]


async def test_the_acp_adapter_offers_the_clis_models_and_switches(live):
    client, fake = live
    sid, ws, caps = await greeted(client, "acp")
    assert "models" not in caps  # not known before the agent runs
    fake.script.append(Turn([text("Hello.")]))
    frames = await drive(ws, sid, "hi")  # starts the adapter: its models are announced
    offered = of(frames, "session.capabilities")[-1]
    ids = [m["id"] for m in offered["models"]]
    assert offered["current_model"] in ids
    other = next(i for i in ids if i != offered["current_model"] and "haiku" in i.lower())
    changed = await set_model(ws, sid, other)
    assert changed["payload"]["current_model"] == other
    fake.script.append(Turn([text("Switched.")]))
    await drive(ws, sid, "again")
    assert "haiku" in last_model(fake)


async def test_acp_config_options_set_the_model_and_others_and_survive_a_restart(live, tmp_path):
    client, _ = live
    sid, ws, _ = await greeted(client, "configured")
    frames = await drive(ws, sid, "hi")
    assert "[config: thought_level=low, model=fast-1]" in json.dumps(frames)
    caps = of(frames, "session.capabilities")[-1]
    assert [m["id"] for m in caps["models"]] == ["fast-1", "deep-2"]  # the model option
    assert caps["current_model"] == "fast-1"
    thought = next(o for o in caps["config_options"] if o["id"] == "thought_level")
    assert [v["value"] for v in thought["options"]] == ["low", "high"]
    changed = await set_model(ws, sid, "deep")  # by name: "Deep"
    assert changed["type"] == "session.capabilities", changed["payload"]
    assert changed["payload"]["current_model"] == "deep-2"
    config = frame("control.config.set", {"config_id": "thought_level", "value": "high"}, sid)
    changed = await _answer(ws, config)
    option = next(o for o in changed["payload"]["config_options"] if o["id"] == "thought_level")
    assert option["current_value"] == "high"
    frames = await drive(ws, sid, "again")
    assert "[config: thought_level=high, model=deep-2]" in json.dumps(frames)
    # A restarted agent opens a new ACP session: what chat chose is set on it again.
    await killed_and_reaped(str(FAKE_ACP))
    frames = await drive(ws, sid, "once more")
    assert "[config: thought_level=high, model=deep-2]" in json.dumps(frames)
    bad = frame("control.config.set", {"config_id": "thought_level", "value": "max"}, sid)
    refused = await _answer(ws, bad)
    assert refused["payload"]["code"] == "INVALID_CONFIG_VALUE"


async def test_an_agent_without_models_refuses(live):
    client, _ = live
    sid, ws, caps = await greeted(client, "demo")
    assert "models" not in caps
    refused = await set_model(ws, sid, "opus")
    assert refused["payload"]["code"] == "UNSUPPORTED_CONTROL"
