"""Messages that start a session where they were written (issue 16 §1), for the listeners.

- A top-level `app_mention` in a channel: a session opens in that message's thread
  (thread_ts = its ts) with the text, mention taken out, as its first prompt.
- A direct message (`message.im`; decision, docs/slack.md): like Slack's assistant apps, each
  thread of the DM is a conversation — a top-level DM opens a session in its thread, a reply in
  a thread with a session is a prompt for it, a reply in a thread without one starts one there.

Both go to `ConversationHooks.start_here`; what it answers (a question, a refusal) and anything
wrong with the message itself is shown to the user alone (`chat.postEphemeral`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from gateway.platform import ConversationRef, Invocation, MessageRef
from gateway.sessions.prompt import PromptError
from rawp.events import PromptRequest

if TYPE_CHECKING:
    from adapters.slack.bot import SlackBot


def without_mention(text: str, bot_user_id: str | None) -> str:
    """Slack's raw `text` without the app's own mentions (`<@U1>`, `<@U1|name>`)."""
    if not bot_user_id:
        return text.strip()
    mention = re.compile(rf"[ \t]*<@{re.escape(bot_user_id)}(?:\|[^>]*)?>[ \t]*")
    return mention.sub(" ", text).strip()


def bot_user_of(context: Any, body: dict[str, Any]) -> str | None:
    """The app's bot user id: Bolt's context, else the event's authorizations."""
    found = context.get("bot_user_id") if context is not None else None
    if found:
        return found
    authorizations = body.get("authorizations") or [{}]
    return authorizations[0].get("user_id")


async def start_from(
    bot: SlackBot,
    event: dict[str, Any],
    conversation: ConversationRef,
    team_id: str | None,
    text: str,
) -> None:
    """Hand the message to `start_here`; answers go to the user alone."""
    platform = bot.platform
    user = event.get("user", "")
    invocation = Invocation(user, conversation, MessageRef(conversation, event["ts"]), team_id)
    heard = None
    try:
        if not text.strip() and not event.get("files"):
            request = PromptRequest(prompt_text="")  # a bare mention: start, prompt nothing
        else:
            request, heard = await bot.prompt_of({**event, "text": text})
    except PromptError as refused:
        await platform.send_ephemeral(conversation, user, f"⚠️ {refused}")
        return
    reply = await platform.hooks.start_here(invocation, request)
    if reply:
        await platform.send_ephemeral(conversation, user, reply)
        return
    # The prompt went in. A top-level message (channel or DM) opened its session in its own
    # thread: the note goes there.
    thread = conversation.thread_id or event["ts"]
    await bot.show_transcript(
        ConversationRef(conversation.platform, conversation.channel_id, thread), heard
    )
