"""The agent's modes as Block Kit buttons (issue 30 §1; gateway.sessions.mode_buttons).

The message is a section (the text) and an actions block with one button per chat mode; the
current one has `style: primary`. A button's `action_id` is `rawp_mode:<name>` and its `value`
names the channel, thread and mode, so a press carries what it needs, also to a gateway that
restarted since. A press is `/rawp mode <name>` in that thread (`hooks.set_mode`, routed to the
session's replica); its answer, or its refusal, is shown to the presser only.
"""

from __future__ import annotations

import json
import re

from adapters.slack.access import REFUSAL
from adapters.slack.mrkdwn import escape, section
from gateway.platform import ConversationRef, Invocation, MessageRef, ModeRow

MODE_ACTION = "rawp_mode"  # + ":<name>"
MODE_BLOCK = "rawp_modes"


def mode_blocks(conversation: ConversationRef, text: str, row: ModeRow) -> list[dict]:
    buttons = []
    for name in row.names:
        value = {"c": conversation.channel_id, "t": conversation.thread_id, "m": name}
        button = {
            "type": "button",
            "action_id": f"{MODE_ACTION}:{name}",
            "text": {"type": "plain_text", "text": name},
            "value": json.dumps(value, separators=(",", ":")),
        }
        if name == row.current:
            button["style"] = "primary"
        buttons.append(button)
    return [section(escape(text)), {"type": "actions", "block_id": MODE_BLOCK, "elements": buttons}]


class ModeMessages:
    """`ChatPlatform.show_modes` for `SlackPlatform` (its `_post`, its `client`): the mode
    message posted with the post key in its metadata (found again after a restart, as every
    keyed post is), or updated in place."""

    async def show_modes(
        self,
        conversation: ConversationRef,
        text: str,
        row: ModeRow,
        key: str,
        message: MessageRef | None = None,
    ) -> MessageRef:
        from adapters.slack.platform import post_metadata, quietly  # it builds on this module

        blocks = mode_blocks(conversation, text, row)
        if message is None:
            return await self._post(conversation, escape(text), blocks, post_metadata(key, 0))
        where = message.conversation.channel_id
        update = self.client.chat_update(
            channel=where, ts=message.message_id, text=escape(text), blocks=blocks
        )
        await quietly(update)
        return message


def parse_value(raw: str | None) -> tuple[ConversationRef, str] | None:
    try:
        data = json.loads(raw or "")
        return ConversationRef("slack", str(data["c"]), data.get("t")), str(data["m"])
    except (ValueError, KeyError, TypeError):
        return None


def listen_to_mode_buttons(app, here) -> None:
    """`here` is the handlers' `_Listening`: the platform, its hooks and the access check."""
    platform = here.platform

    @app.action(re.compile(rf"^{MODE_ACTION}:[a-z-]+$"))
    async def on_mode(ack, body, action):
        await ack()
        parsed = parse_value(action.get("value"))
        if parsed is None:
            return
        conversation, mode = parsed
        user = body["user"]["id"]
        if not await here.allowed(body, conversation.channel_id, user):
            await platform.send_ephemeral(conversation, user, REFUSAL)
            return
        invocation = Invocation(user, conversation, None, here.team_of(body))
        reply = await platform.hooks.set_mode(invocation, mode)
        await platform.send_ephemeral(conversation, user, reply or "Done.")
