"""Each agent kind's table is validated once, against its pydantic model
(client/agents/kinds.py): a wrong value stops loading with one line naming the agent, the
field and what the field accepts; today's valid tables load to typed settings."""

from __future__ import annotations

import pytest

from client.agents import AgentsFileError, load_agents
from client.agents.kinds import (
    AcpSettings,
    ClaudeCodeSettings,
    OpenAISettings,
    ScriptSettings,
)

REQUIRED = {
    "script": 'command = ["x"]',
    "claude-code": "",
    "acp": 'command = ["agent"]',
    "openai": 'base_url = "http://127.0.0.1:9/v1"\nmodel = "m"',
}

# (kind, the bad line, what the one-line message must say after the agent's table name)
BAD = [
    (
        "script",
        "command = 5",
        "command: expected a non-empty list of strings (or one string), got 5",
    ),
    ("script", 'command = ["a", 1]', "command: expected a non-empty list of strings"),
    ("script", 'mode = "xml"', "mode: expected one of plain, jsonl, got 'xml'"),
    ("script", "env = { A = 1 }", "env: expected a table of strings, got {'A': 1}"),
    ("claude-code", 'command = "ls"', "command: expected a non-empty list of strings, got 'ls'"),
    ("claude-code", "max_turns = 1.5", "max_turns: expected a whole number, got 1.5"),
    ("claude-code", 'allowed_tools = "Bash"', "allowed_tools: expected a list of tool names"),
    ("claude-code", 'startup_timeout = "soon"', "startup_timeout: expected a number of seconds"),
    ("acp", 'install_hint = ["npm"]', "install_hint: expected a string, got ['npm']"),
    ("acp", "env = []", "env: expected a table of strings, got []"),
    ("openai", "images = 1", "images: expected true or false, got 1"),
    ("openai", 'files = "attach"', "files: expected one of reference, inline, got 'attach'"),
    ("openai", "prices = { input = -1 }", "prices: expected a table of input, output"),
    ("openai", 'temperature = "warm"', "temperature: expected a number, got 'warm'"),
    ("openai", "api_key_env = 3", "api_key_env: expected the name of an environment variable"),
    # the fields every kind has
    ("script", 'description = ["x"]', "description: expected a string, got ['x']"),
    ("acp", 'active = "yes"', "active: expected true or false, got 'yes'"),
    ("openai", 'attachments_dir = "../up"', "attachments_dir: expected a non-empty path"),
    ("claude-code", 'tools = "Bash"', "tools: expected a list of tables"),
]


@pytest.mark.parametrize(
    ("kind", "line", "message"), BAD, ids=[f"{k}-{line.split()[0]}" for k, line, _ in BAD]
)
def test_a_wrong_value_is_refused_in_one_line_naming_agent_field_and_accepted(
    tmp_path, kind, line, message
):
    file = tmp_path / "agents.toml"
    # The bad line comes last so it replaces a required value of the same key.
    lines = [ln for ln in REQUIRED[kind].splitlines() if ln.split()[0] != line.split()[0]]
    file.write_text("\n".join(["[agents.coder]", f'kind = "{kind}"', *lines, line]) + "\n")
    with pytest.raises(AgentsFileError) as refused:
        load_agents(file)
    text = str(refused.value)
    assert "\n" not in text
    assert text.startswith(f"agents file {file}: [agents.coder] {message}")


def test_valid_tables_load_to_each_kinds_typed_settings_with_defaults(tmp_path):
    file = tmp_path / "agents.toml"
    file.write_text(
        "".join(f'[agents.{k.replace("-", "_")}]\nkind = "{k}"\n{r}\n' for k, r in REQUIRED.items())
        + 'unknown_key = "ignored, as before"\n'
    )
    specs = load_agents(file)
    script, claude, acp, openai = (
        specs[n].settings for n in ("script", "claude_code", "acp", "openai")
    )
    assert isinstance(script, ScriptSettings) and (script.mode, script.env) == ("plain", {})
    assert isinstance(claude, ClaudeCodeSettings) and claude.command == ["claude"]
    assert claude.startup_timeout == 60.0 and claude.max_turns is None
    assert isinstance(acp, AcpSettings) and acp.install_hint is None
    assert isinstance(openai, OpenAISettings)
    assert (openai.files, openai.images, openai.timeout) == ("reference", True, 300.0)
    assert all(s.active and s.attachments_dir == ".rawp/attachments" for s in (script, acp))
