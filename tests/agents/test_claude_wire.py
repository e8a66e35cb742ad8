"""The lines the claude-code kind writes to the `claude` CLI, built in one place
(client.agents.claude_wire): the command line, the approval question and its answers."""

from client.agents.base import ImageAttachment, Prompt
from client.agents.claude_wire import (
    approval_answer,
    approval_request,
    cli_argv,
    control_error,
    published_commands,
    user_message,
)
from client.agents.kinds import ClaudeCodeSettings
from rawp.events import InteractionResponse

REQUEST = {
    "subtype": "can_use_tool",
    "tool_name": "Bash",
    "input": {"command": "rm -rf build"},
    "permission_suggestions": [{"type": "addRules"}],
    "tool_use_id": "toolu_1",
}


def test_the_command_line_carries_the_settings_and_the_conversation_to_resume():
    settings = ClaudeCodeSettings(
        command=["claude", "--debug"], model="opus", allowed_tools=["Read", "Grep"]
    )
    argv = cli_argv("/bin/claude", settings, resume="abc")
    assert argv[:2] == ["/bin/claude", "--debug"]
    assert "--permission-prompt-tool" in argv and argv[argv.index("--input-format") + 1] == (
        "stream-json"
    )
    assert "--model=opus" in argv and "--allowedTools=Read,Grep" in argv
    assert argv[-1] == "--resume=abc"
    assert not any(
        a.startswith(("--resume", "--disallowedTools", "--permission-mode"))
        for a in cli_argv("claude", ClaudeCodeSettings(), resume=None)
    )


def test_a_mode_chosen_from_chat_replaces_the_configured_permission_mode():
    settings = ClaudeCodeSettings(permission_mode="acceptEdits")
    assert "--permission-mode=acceptEdits" in cli_argv("claude", settings, resume=None)
    argv = cli_argv("claude", settings, resume=None, mode="plan")
    assert "--permission-mode=plan" in argv and "--permission-mode=acceptEdits" not in argv


def test_an_approval_offers_always_only_when_the_cli_suggests_permissions():
    payload = approval_request("r1", REQUEST)
    assert payload["prompt"] == "Allow Bash: rm -rf build?"
    assert [o["option_id"] for o in payload["options"]] == ["allow", "allow_always", "deny"]
    assert payload["invocation_id"] == "toolu_1"
    plain = approval_request("r2", {"tool_name": "Read", "input": {"file_path": "a.py"}})
    assert [o["option_id"] for o in plain["options"]] == ["allow", "deny"]
    assert "invocation_id" not in plain


def test_the_answer_allows_with_the_input_unchanged_or_denies_with_the_users_words():
    always = approval_answer(
        REQUEST, InteractionResponse(interaction_id="r1", option_id="allow_always")
    )
    assert always == {
        "behavior": "allow",
        "updatedInput": REQUEST["input"],
        "updatedPermissions": REQUEST["permission_suggestions"],
    }
    once = approval_answer(REQUEST, InteractionResponse(interaction_id="r1", option_id="allow"))
    assert "updatedPermissions" not in once
    denied = approval_answer(REQUEST, InteractionResponse(interaction_id="r1", option_id="deny"))
    assert denied == {"behavior": "deny", "message": "The user denied this."}
    said = InteractionResponse(interaction_id="r1", option_id="deny", text="not now")
    assert approval_answer(REQUEST, said)["message"] == "not now"


def test_images_go_before_the_text_and_a_slash_command_is_trimmed():
    image = ImageAttachment(name="a.png", mime_type="image/png", data="aGk=")
    content = user_message(Prompt("m", "look", (), images=(image,)))["message"]["content"]
    assert [block["type"] for block in content] == ["image", "text"]
    assert user_message(Prompt("m", " /review ", (), "slash_command"))["message"]["content"] == (
        "/review"
    )


def test_commands_lose_their_slash_and_an_argument_hint_becomes_a_parameter():
    commands = published_commands(
        [{"name": "/review", "argumentHint": "<pr>"}, {"name": "compact"}, {"description": "x"}]
    )
    assert commands == [
        {
            "name": "review",
            "description": "",
            "parameters": [{"name": "<pr>", "required": False}],
        },
        {"name": "compact", "description": ""},
    ]
    assert control_error("r9", "no")["response"] == {
        "subtype": "error",
        "request_id": "r9",
        "error": "no",
    }
