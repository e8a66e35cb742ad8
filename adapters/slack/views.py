"""The prompt composer modal: text, files picked by an external select, an agent command.

Opened by `/rawp prompt` or by the "📎 Prompt with files" button on a session thread's parent
message. Its selects are `external_select`s: Slack asks the app for options as the user types
(`block_suggestion`), and the app asks the conversation layer (`control.file.search`, the
session's published commands). `private_metadata` names the conversation (channel, thread).
"""

from __future__ import annotations

import json

from gateway.platform import ConversationRef

PROMPT_VIEW = "rawp_prompt_view"
COMPOSE_ACTION = "rawp_compose"
FILE_ACTION, COMMAND_ACTION, TEXT_ACTION = "rawp_file", "rawp_command", "rawp_text"
FILE_BLOCK, COMMAND_BLOCK, TEXT_BLOCK = "files", "command", "text"
MAX_OPTIONS = 100  # Slack shows at most 100 options
MAX_OPTION_TEXT, MAX_OPTION_VALUE = 75, 150


def where(conversation: ConversationRef) -> str:
    return json.dumps({"c": conversation.channel_id, "t": conversation.thread_id})


def conversation_from(raw: str | None) -> ConversationRef | None:
    try:
        data = json.loads(raw or "")
        return ConversationRef("slack", str(data["c"]), data.get("t"))
    except (ValueError, KeyError, TypeError):
        return None


def compose_button(conversation: ConversationRef) -> dict:
    return {
        "type": "actions",
        "block_id": "rawp_compose",
        "elements": [
            {
                "type": "button",
                "action_id": COMPOSE_ACTION,
                "text": {"type": "plain_text", "text": "📎 Prompt with files"},
                "value": where(conversation),
            }
        ],
    }


def _plain(text: str) -> dict:
    return {"type": "plain_text", "text": text}


def prompt_view(conversation: ConversationRef) -> dict:
    return {
        "type": "modal",
        "callback_id": PROMPT_VIEW,
        "private_metadata": where(conversation),
        "title": _plain("Prompt the agent"),
        "submit": _plain("Send"),
        "blocks": [
            {
                "type": "input",
                "block_id": TEXT_BLOCK,
                "optional": True,
                "label": _plain("Prompt"),
                "element": {
                    "type": "plain_text_input",
                    "action_id": TEXT_ACTION,
                    "multiline": True,
                },
            },
            {
                "type": "input",
                "block_id": FILE_BLOCK,
                "optional": True,
                "label": _plain("Files"),
                "element": {
                    "type": "multi_external_select",
                    "action_id": FILE_ACTION,
                    "min_query_length": 1,
                    "placeholder": _plain("Type part of a file name"),
                },
            },
            {
                "type": "input",
                "block_id": COMMAND_BLOCK,
                "optional": True,
                "label": _plain("Agent command"),
                "element": {
                    "type": "external_select",
                    "action_id": COMMAND_ACTION,
                    "min_query_length": 0,
                    "placeholder": _plain("/command"),
                },
            },
        ],
    }


def option(label: str, value: str) -> dict:
    shown = label if len(label) <= MAX_OPTION_TEXT else "…" + label[-(MAX_OPTION_TEXT - 1) :]
    return {"text": _plain(shown), "value": value}


def options(pairs: list[tuple[str, str]]) -> list[dict]:
    """At most 100 options; a value longer than Slack allows cannot be offered."""
    fitting = [option(label, value) for label, value in pairs if 0 < len(value) <= MAX_OPTION_VALUE]
    return fitting[:MAX_OPTIONS]


def submitted(values: dict) -> tuple[str, list[str], str | None]:
    """(text, picked file paths, picked command name) from a view's state.values."""
    text = values.get(TEXT_BLOCK, {}).get(TEXT_ACTION, {}).get("value") or ""
    picked = values.get(FILE_BLOCK, {}).get(FILE_ACTION, {}).get("selected_options") or []
    command = values.get(COMMAND_BLOCK, {}).get(COMMAND_ACTION, {}).get("selected_option")
    return text, [o["value"] for o in picked], command["value"] if command else None
