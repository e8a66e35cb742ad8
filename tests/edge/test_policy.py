"""The A-24 security policy: denied tool overrides and slash commands."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from master.edge.links.policy import INVISIBLE, SecurityPolicy, slash_command
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


# Every spelling under which some agent kind would run `/deploy` (docs/agents.md, per kind).
# Claude Code 2.1: content JS-trim()med, starts with `/`, the name runs to the first `\s`;
# `name sub` may run `name:sub`; plugin and MCP commands are `plugin:name`, `mcp:server:name`.
DENIED_SPELLINGS = [
    "/deploy",
    "/deploy now please",
    "/DEPLOY",
    "/Deploy",
    " /deploy",
    "\t/deploy",
    "\n\n/deploy",
    "\r\n/deploy",
    "\u00a0/deploy",  # no-break space
    "\u2003/deploy",  # em space
    "\u3000/deploy",  # ideographic space
    "\u2028/deploy",  # line separator
    "\u200b/deploy",  # zero-width space
    "\u200d/deploy",  # zero-width joiner
    "\u2060/deploy",  # word joiner
    "\ufeff/deploy",  # byte-order mark (JS trim() strips it)
    "\u202e/deploy",  # right-to-left override
    "\x00/deploy",
    "\x0b\x0c/deploy",
    "//deploy",
    "///deploy",
    "\uff0fdeploy",  # fullwidth solidus: NFKC is `/`
    "/\uff44\uff45\uff50\uff4c\uff4f\uff59",  # fullwidth letters
    "/de\u200bploy",  # a zero-width space inside the name
    "/deploy\u200b",
    "/deploy\ufeffprod",
    "/deploy.",
    "/deploy!",
    "/deploy\tprod",
    "/deploy\nprod",
    "/plugin:deploy",
    "/mcp:server:deploy args",
    "/server:deploy (MCP)",
    "  /  deploy",  # Gemini CLI trims after the slash too
    "/DeP\u00adLoY",  # soft hyphen (a format character) inside
]

ALLOWED_SPELLINGS = [
    "deploy",
    "please /deploy",
    "run it\n/deploy",  # only the first non-blank character counts, as for every agent
    "\\\\/deploy",  # an escaped backslash: the agent gets `\/deploy`
    "@/deploy",
    "/deployment",
    "/review main",
    "/",
    "https://example.com/deploy",
    "",
]


@pytest.mark.parametrize("input_type", ["text", "slash_command", "other"])
@pytest.mark.parametrize("text", DENIED_SPELLINGS)
def test_a_denied_command_is_refused_in_every_spelling_and_input_type(text, input_type):
    policy = SecurityPolicy(deny_commands=["/Deploy", "plan:apply"])
    verdict = policy.check(prompt(text, input_type=input_type))
    assert not verdict.allowed, repr(text)
    assert "deploy" in verdict.reason


@pytest.mark.parametrize("input_type", ["text", "slash_command"])
@pytest.mark.parametrize("text", ALLOWED_SPELLINGS)
def test_text_no_agent_reads_as_a_denied_command_passes(text, input_type):
    policy = SecurityPolicy(deny_commands=["deploy"])
    assert policy.check(prompt(text, input_type=input_type)).allowed, repr(text)


@pytest.mark.parametrize(
    "text",
    ["/plan apply", "/plan:apply", "/PLAN  Apply now", "\u200b/plan\u3000apply", "/x:plan:apply"],
)
def test_a_denied_subcommand_is_refused_as_claude_code_resolves_it(text):
    policy = SecurityPolicy(deny_commands=["plan:apply"])
    assert not policy.check(prompt(text)).allowed, repr(text)
    assert policy.check(prompt("/plan show")).allowed


def test_a_file_token_leading_the_prompt_is_read_as_its_display_path():
    """The kinds write a token as its display_path: one that starts with `/` starts a command."""
    refs = [{"ref_id": "ref_0", "path": "deploy.md"}]
    policy = SecurityPolicy(deny_commands=["deploy"])
    for text in ("<@file:ref_0|/deploy> now", "<@file:ref_0|//deploy>", "<@file:ref_0|/deploy>"):
        assert not policy.check(prompt(text, file_references=refs)).allowed, text
    assert policy.check(prompt("<@file:ref_0|docs/deploy> /deploy", file_references=refs)).allowed


def test_no_deny_list_lets_every_command_through():
    assert SecurityPolicy().check(prompt("/deploy", input_type="text")).allowed
    assert SecurityPolicy(deny_commands=["/", " "]).check(prompt("/deploy")).allowed


@given(st.text(alphabet=st.characters(blacklist_categories=("Z", "C")), min_size=1, max_size=20),
       st.text(max_size=40))  # fmt: skip
@example(name="/", rest="0")  # found by a run: slashes, a space, then the word
def test_the_command_name_is_the_first_word_after_the_slash(name, rest):
    text = f"/{name} {rest}"
    if name.startswith("/"):  # `//x` is read as `/x`; `// x` as `x` (a deny list reads wide)
        name = next(iter(f"{name.lstrip('/')} {rest}".split()), None)
    for input_type in ("slash_command", "text"):
        assert slash_command(prompt(text, input_type=input_type)) == name


@given(st.text(max_size=30))
def test_a_denied_name_is_refused_whatever_precedes_it_invisibly(junk):
    invisible = "".join(c for c in junk if c.isspace() or unicodedata.category(c) in INVISIBLE)
    policy = SecurityPolicy(deny_commands=["deploy"])
    assert not policy.check(prompt(f"{invisible}/deploy x")).allowed
