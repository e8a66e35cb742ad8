"""The A-24 security policy: denied tool overrides and slash commands."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from master.edge.policy import SecurityPolicy, slash_command
from rawp.events import PromptRequest


def prompt(text: str = "hi", **fields) -> PromptRequest:
    return PromptRequest(prompt_text=text, **fields)


def test_denied_tools_are_matched_without_case():
    policy = SecurityPolicy(deny_tools=["Bash", " Write "])
    assert policy.check(prompt(tool_overrides=["Read"])).allowed
    refused = policy.check(prompt(tool_overrides=["Read", "bash"]))
    assert not refused.allowed and "'bash'" in refused.reason
    assert not policy.check(prompt(tool_overrides=["WRITE"])).allowed
    assert policy.check(prompt()).allowed  # no overrides asked for


def test_a_star_denies_every_override_but_not_a_plain_prompt():
    policy = SecurityPolicy(deny_tools=["*"])
    assert not policy.check(prompt(tool_overrides=["Read"])).allowed
    assert policy.check(prompt(tool_overrides=[])).allowed


def test_denied_slash_commands_only_as_slash_commands():
    policy = SecurityPolicy(deny_commands=["/Nuke", "reset"])
    assert not policy.check(prompt("/nuke everything", input_type="slash_command")).allowed
    assert not policy.check(prompt("  /RESET", input_type="slash_command")).allowed
    assert policy.check(prompt("/review", input_type="slash_command")).allowed
    # Typed text that happens to start with a slash is text for the agent, not a command.
    assert policy.check(prompt("/nuke is a word here", input_type="text")).allowed


@given(st.text(alphabet=st.characters(blacklist_categories=("Z", "C")), min_size=1, max_size=20),
       st.text(max_size=40))  # fmt: skip
def test_the_command_name_is_the_first_word_after_the_slash(name, rest):
    text = f"/{name} {rest}"
    assert slash_command(prompt(text, input_type="slash_command")) == name
    assert slash_command(prompt(text, input_type="text")) is None
