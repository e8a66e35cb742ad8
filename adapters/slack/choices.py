"""Interaction prompts as Block Kit buttons whose action ids and values survive a restart.

A button's `action_id` is `rawp_choice:<n>` (unique within the message) and its `value` a small
JSON object naming the channel, thread, interaction and option: a click carries everything
needed to route it, also to a gateway that restarted since the prompt was posted. The handlers
push it to the gateway's prompt board (gateway.approvals.prompt_board), where open prompts are keyed
by ((channel, thread), interaction id), so a prompt re-posted after a reconnect and the
old one answer the same wait. A free-text prompt (`kind: input`) gets one "Answer…" button that
opens a modal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from adapters.slack.mrkdwn import escape, section
from gateway.platform import ConversationRef, InteractionPrompt

CHOICE_ACTION = "rawp_choice"  # + ":<n>"
ANSWER_ACTION = "rawp_answer"
ANSWER_VIEW = "rawp_answer_view"
ANSWER_BLOCK, ANSWER_INPUT = "answer", "answer_text"
MAX_VALUE = 2000  # Slack's limit for a button value
STYLES = {"allow_once": "primary", "allow_always": "primary", "reject_once": "danger"}
STYLES["reject_always"] = "danger"


@dataclass(frozen=True, slots=True)
class ChoiceValue:
    channel: str
    thread: str | None
    interaction: str
    option: str  # option id, "#<index>", or "" for a free-text answer

    def encode(self) -> str:
        return json.dumps(
            {"c": self.channel, "t": self.thread, "i": self.interaction, "o": self.option},
            separators=(",", ":"),
        )

    @property
    def where(self) -> tuple[str, str | None]:
        """The conversation this button answers in, as the prompt board knows it."""
        return (self.channel, self.thread)


def where_of(conversation: ConversationRef) -> tuple[str, str | None]:
    return (conversation.channel_id, conversation.thread_id)


def parse_value(raw: str | None) -> ChoiceValue | None:
    try:
        data = json.loads(raw or "")
        return ChoiceValue(str(data["c"]), data.get("t"), str(data["i"]), str(data.get("o", "")))
    except (ValueError, KeyError, TypeError):
        return None


def prompt_blocks(conversation: ConversationRef, prompt: InteractionPrompt) -> list[dict]:
    blocks = [section(f"❓ {escape(prompt.prompt)}"[:3000])]
    channel, thread = conversation.channel_id, conversation.thread_id
    if not prompt.options:
        value = ChoiceValue(channel, thread, prompt.interaction_id, "")
        button = {"type": "button", "action_id": ANSWER_ACTION, "value": value.encode()}
        button["text"] = {"type": "plain_text", "text": "Answer…"}
        return [*blocks, {"type": "actions", "block_id": "rawp_prompt", "elements": [button]}]
    elements = []
    for index, option in enumerate(prompt.options[:25]):
        value = ChoiceValue(channel, thread, prompt.interaction_id, option.option_id).encode()
        if len(value) > MAX_VALUE:
            value = ChoiceValue(channel, thread, prompt.interaction_id, f"#{index}").encode()
        button = {
            "type": "button",
            "action_id": f"{CHOICE_ACTION}:{index}",
            "text": {"type": "plain_text", "text": option.label[:75], "emoji": True},
            "value": value,
        }
        if option.kind in STYLES:
            button["style"] = STYLES[option.kind]
        elements.append(button)
    # An actions block holds at most 25 elements.
    return [*blocks, {"type": "actions", "block_id": "rawp_prompt", "elements": elements}]


def answer_view(value: ChoiceValue, question: str) -> dict:
    return {
        "type": "modal",
        "callback_id": ANSWER_VIEW,
        "private_metadata": value.encode(),
        "title": {"type": "plain_text", "text": "Answer the agent"},
        "submit": {"type": "plain_text", "text": "Send"},
        "blocks": [
            {
                "type": "input",
                "block_id": ANSWER_BLOCK,
                "label": {"type": "plain_text", "text": question[:2000] or "Answer"},
                "element": {
                    "type": "plain_text_input",
                    "action_id": ANSWER_INPUT,
                    "multiline": True,
                },
            }
        ],
    }
