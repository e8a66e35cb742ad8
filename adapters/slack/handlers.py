"""Bolt listeners: what Slack sends the app, turned into platform-neutral hook calls.

Every listener acknowledges first (Slack wants an answer within 3 s), checks access
(adapters.slack.access), then works. Users outside the allowed workspaces, channels or user
groups get an ephemeral refusal and nothing else happens.

- a human's `message` in a thread → `hooks.prompt` (text escaped, shared files attached);
- a top-level `app_mention` and every direct message → `hooks.start_here` (adapters.slack.starts);
- `/rawp <verb> …` → the start / stop / end / pair / nodes / sessions / usage / busy / mode /
  model / worktree / web hooks;
  `/rawp prompt` opens the composer modal;
- `block_actions` on a prompt button → the waiting approval gets the `Choice` (nobody waiting:
  `hooks.stale_choice`);
- `block_actions` on a mode button → `hooks.set_mode` (adapters.slack.mode_buttons);
- `block_suggestion` in the composer → files from `hooks.search_files`, commands from
  `hooks.agent_commands`;
- `view_submission` of the composer → the prompt is shown in the thread, then `hooks.prompt`.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from adapters.slack import choices, starts, views
from adapters.slack.access import REFUSAL, is_direct
from adapters.slack.mode_buttons import listen_to_mode_buttons
from adapters.slack.mrkdwn import from_slack_text
from adapters.slack.platform import REVEAL_ACTION
from gateway.approvals.prompt_board import option_of
from gateway.platform import Choice, ConversationRef, Invocation, MessageRef, StaleChoice
from gateway.sessions.prompt import PickedFile, PromptDraft, PromptError, slash_prompt

if TYPE_CHECKING:
    from adapters.slack.bot import SlackBot

log = logging.getLogger(__name__)
HELP = (
    "Usage: `{c} start <node> <agent>` (`--worktree`: in its own git worktree) · "
    "`{c} prompt` · `{c} stop` · `{c} end` · "
    "`{c} pair` · `{c} nodes` · `{c} sessions` · `{c} usage` · `{c} busy [queue|interrupt]` · "
    "`{c} mode [plan|ask|accept-edits]` · `{c} model [name]` · "
    "`{c} worktree diff|merge|discard` · "
    "`{c} resume [list|<n>|<id>]` · `{c} fork` · `{c} web` · "
    '`{c} schedule "<cron or phrase>" <prompt>` · `{c} schedules` · '
    "`{c} schedule pause|resume|delete <id>`"
)
SIMPLE_VERBS = {
    "stop": "stop",
    "end": "end",
    "pair": "pair",
    "nodes": "list_nodes",
    "sessions": "list_sessions",
    "usage": "usage",  # issue 16 §4: answered ephemerally, like every verb here
    "web": "web_link",  # issue 21: a one-time login link, so only the caller may see it
    "resume": "resume_session",  # issue 30 §2: the user's newest ended session here goes on
    "fork": "fork_session",  # issue 30 §2: a copy of the user's newest session, a new thread
}


def _team(body: dict[str, Any]) -> str | None:
    team = body.get("team_id") or body.get("team") or body.get("user", {}).get("team_id")
    return team.get("id") if isinstance(team, dict) else team


class _Listening:
    """What every listener reads: the bot, its platform (whose hooks are read at each call:
    they may be replaced) and the access check."""

    def __init__(self, bot: SlackBot) -> None:
        self.bot = bot
        self.platform = bot.platform

    async def allowed(self, body, channel: str | None, user: str) -> bool:
        return await self.bot.access.allows(_team(body), channel, user)

    @staticmethod
    def team_of(body: dict[str, Any]) -> str | None:
        return _team(body)


def register(app, bot: SlackBot) -> None:
    """Every Bolt listener of the app, one group per kind of thing Slack sends."""
    here = _Listening(bot)
    _listen_to_messages(app, here)
    _listen_to_the_command(app, here)
    _listen_to_prompt_buttons(app, here)
    listen_to_mode_buttons(app, here)  # issue 30 §1
    _listen_to_the_composer(app, here)
    _listen_for_suggestions(app, here)


# --- thread messages are prompts ----------------------------------------------------------


def _listen_to_messages(app, here: _Listening) -> None:
    bot, platform = here.bot, here.platform

    @app.event("message")
    async def on_message(event, body, context):
        if event.get("subtype") not in (None, "file_share") or event.get("bot_id"):
            return
        thread = event.get("thread_ts")
        channel, user = event["channel"], event.get("user", "")
        # The app's own mention is addressing, not prompt (issue 16 §1).
        text = starts.without_mention(event.get("text") or "", starts.bot_user_of(context, body))
        if event.get("channel_type") == "im" or is_direct(channel):  # issue 16 §1
            if not await here.allowed(body, channel, user):
                await platform.send_ephemeral(ConversationRef("slack", channel), user, REFUSAL)
                return
            where = ConversationRef("slack", channel, thread if thread != event["ts"] else None)
            await starts.start_from(bot, event, where, _team(body), text)
            return
        if not thread or thread == event.get("ts"):
            return  # only replies in a session thread are prompts
        if not await here.allowed(body, channel, user):
            return  # a message cannot be answered privately except by postEphemeral
        conversation = ConversationRef("slack", channel, thread)
        invocation = Invocation(
            user, conversation, MessageRef(conversation, event["ts"]), _team(body)
        )
        try:
            request, heard = await bot.prompt_of({**event, "text": text})
        except PromptError as refused:
            await platform.send_ephemeral(conversation, user, f"⚠️ {refused}")
            return
        reply = await platform.hooks.prompt(invocation, request)
        if reply:
            await platform.send_ephemeral(conversation, user, reply)
        else:  # the prompt went in
            await bot.show_transcript(conversation, heard)

    @app.event("app_mention")
    async def on_mention(event, body, context):
        if event.get("thread_ts") or is_direct(event.get("channel")):
            return  # the `message` event carries it (a thread reply, a DM)
        channel, user = event["channel"], event.get("user", "")
        conversation = ConversationRef("slack", channel)
        if not await here.allowed(body, channel, user):
            await platform.send_ephemeral(conversation, user, REFUSAL)
            return
        text = starts.without_mention(event.get("text") or "", starts.bot_user_of(context, body))
        await starts.start_from(bot, event, conversation, _team(body), text)


# --- the slash command --------------------------------------------------------------------


def _listen_to_the_command(app, here: _Listening) -> None:
    bot, platform = here.bot, here.platform

    @app.command(bot.settings.command)
    async def on_command(ack, command, respond, client):
        user, channel = command["user_id"], command["channel_id"]
        if not await here.allowed(command, channel, user):
            await ack(text=REFUSAL, response_type="ephemeral")
            return
        text = from_slack_text(command.get("text") or "")
        verb, *words = text.split() or [""]
        conversation = ConversationRef("slack", channel)
        invocation = Invocation(user, conversation, None, _team(command))
        if verb == "prompt":
            await ack()
            view = views.prompt_view(conversation)
            await client.views_open(trigger_id=command["trigger_id"], view=view)
            return
        await ack()
        worktree = "--worktree" in words  # issue 30 §3: `start <node> <agent> --worktree`
        if verb == "start" and worktree:
            words.remove("--worktree")
        if verb == "start" and len(words) == 2:
            reply = await platform.hooks.start_session(invocation, words[0], words[1], worktree)
        elif verb == "resume" and len(words) == 1:  # issue 30 §2: list, or pick from the terminal
            reply = await platform.hooks.resume_session(invocation, words[0])
        elif verb in SIMPLE_VERBS and not words:
            reply = await getattr(platform.hooks, SIMPLE_VERBS[verb])(invocation)
        elif verb == "busy" and len(words) <= 1:  # issue 16 §5: this channel's busy mode
            reply = await platform.hooks.set_busy(invocation, words[0] if words else None)
        elif verb == "mode" and len(words) <= 1:  # issue 30 §1: the session's agent mode
            reply = await platform.hooks.set_mode(invocation, words[0] if words else None)
        elif verb == "model" and len(words) <= 1:  # issue 30 §1: the session's agent model
            reply = await platform.hooks.set_model(invocation, words[0] if words else None)
        elif verb == "worktree" and len(words) == 1:  # issue 30 §3: end the session's worktree
            reply = await platform.hooks.worktree(invocation, words[0])
        elif verb in ("schedule", "schedules"):  # issue 30 §5: the rest, quotes and all
            rest = text.strip()[len(verb) :].strip() if verb == "schedule" else "list"
            reply = await platform.hooks.schedule(invocation, rest)
        else:
            reply = HELP.format(c=bot.settings.command)
        await respond(text=reply or "Done.", response_type="ephemeral")


# --- prompt buttons -----------------------------------------------------------------------


def _listen_to_prompt_buttons(app, here: _Listening) -> None:
    platform = here.platform

    @app.action(re.compile(rf"^{choices.CHOICE_ACTION}:\d+$"))
    async def on_choice(ack, body, action):
        await ack()
        value = choices.parse_value(action.get("value"))
        if value is not None:
            waiting = platform.prompt_board.find(value.where, value.interaction)
            option = option_of(waiting.prompt if waiting else None, value.option)
            await _deliver(here, body, value, Choice(body["user"]["id"], option_id=option))

    @app.action(choices.ANSWER_ACTION)
    async def on_answer_button(ack, body, action, client):
        await ack()
        value = choices.parse_value(action.get("value"))
        if value is None or not await here.allowed(body, value.channel, body["user"]["id"]):
            return
        waiting = platform.prompt_board.find(value.where, value.interaction)
        question = waiting.prompt.prompt if waiting else "Answer"
        await client.views_open(
            trigger_id=body["trigger_id"], view=choices.answer_view(value, question)
        )

    @app.view(choices.ANSWER_VIEW)
    async def on_answer(ack, body, view):
        await ack()
        value = choices.parse_value(view.get("private_metadata"))
        state = view["state"]["values"].get(choices.ANSWER_BLOCK, {})
        text = state.get(choices.ANSWER_INPUT, {}).get("value") or ""
        if value is not None:
            await _deliver(here, body, value, Choice(body["user"]["id"], text=text))

    @app.action(REVEAL_ACTION)
    async def on_reveal(ack, body, action):
        await ack()
        container = body.get("container", {})
        channel, user = container.get("channel_id", ""), body["user"]["id"]
        conversation = ConversationRef("slack", channel, container.get("thread_ts"))
        if await here.allowed(body, channel, user):
            await platform.reveal(conversation, user, action.get("value", ""))


async def _deliver(here: _Listening, body, value: choices.ChoiceValue, choice: Choice) -> None:
    platform = here.platform
    conversation = ConversationRef("slack", value.channel, value.thread)
    if not await here.allowed(body, value.channel, choice.user_id):
        await platform.send_ephemeral(conversation, choice.user_id, REFUSAL)
        return
    if platform.prompt_board.answer(value.where, value.interaction, choice):
        return  # the core accepts it or refuses it privately
    invocation = Invocation(choice.user_id, conversation, None, _team(body))
    note = await platform.hooks.stale_choice(StaleChoice(invocation, value.interaction, choice))
    if note:
        await platform.send_ephemeral(conversation, choice.user_id, note)


# --- the composer -------------------------------------------------------------------------


def _listen_to_the_composer(app, here: _Listening) -> None:
    platform = here.platform

    @app.action(views.COMPOSE_ACTION)
    async def on_compose(ack, body, client):
        await ack()
        container = body.get("container", {})
        channel = container.get("channel_id", "")
        if not await here.allowed(body, channel, body["user"]["id"]):
            await platform.send_ephemeral(
                ConversationRef("slack", channel), body["user"]["id"], REFUSAL
            )
            return
        # The button sits on the thread's parent message: its ts is the thread.
        conversation = ConversationRef("slack", channel, container.get("message_ts"))
        await client.views_open(trigger_id=body["trigger_id"], view=views.prompt_view(conversation))

    @app.view(views.PROMPT_VIEW)
    async def on_prompt_submitted(ack, body, view):
        invocation = _composer_invocation(body)
        text, paths, command_name = views.submitted(view["state"]["values"])
        try:
            request, shown = await _compose(here, invocation, text, paths, command_name)
        except PromptError as refused:
            await ack(response_action="errors", errors={views.TEXT_BLOCK: str(refused)})
            return
        await ack()
        if invocation is None or not await here.allowed(
            body, invocation.conversation.channel_id, invocation.user_id
        ):
            return
        # The prompt is shown in the thread; ⏳/✅ land on that message.
        posted = await platform.show_prompt(invocation.conversation, invocation.user_id, shown)
        invocation = Invocation(
            invocation.user_id, invocation.conversation, posted, invocation.workspace_id
        )
        reply = await platform.hooks.prompt(invocation, request)
        if reply:
            await platform.send_ephemeral(invocation.conversation, invocation.user_id, reply)


def _listen_for_suggestions(app, here: _Listening) -> None:
    bot, platform = here.bot, here.platform

    async def asking(body) -> Invocation | None:
        invocation = _composer_invocation(body)
        if invocation is None or not await here.allowed(
            body, invocation.conversation.channel_id, invocation.user_id
        ):
            return None
        return invocation

    @app.options(views.FILE_ACTION)
    async def on_file_suggestion(ack, body, payload):
        invocation = await asking(body)
        if invocation is None:
            await ack(options=[])
            return
        found = await bot.within_budget(
            platform.hooks.search_files(invocation, payload.get("value", ""))
        )
        await ack(options=views.options([(c.path, c.path) for c in found or []]))

    @app.options(views.COMMAND_ACTION)
    async def on_command_suggestion(ack, body, payload):
        invocation = await asking(body)
        if invocation is None:
            await ack(options=[])
            return
        typed = (payload.get("value") or "").removeprefix("/")
        published = await bot.within_budget(platform.hooks.agent_commands(invocation)) or []
        matching = sorted(
            (c for c in published if c.name.startswith(typed)),  # G-CMD-14
            key=lambda c: (c.category or "", c.name),  # G-CMD-16
        )
        pairs = [(f"/{c.name} — {c.description}".rstrip(" —"), c.name) for c in matching]
        await ack(options=views.options(pairs))


def _composer_invocation(body) -> Invocation | None:
    conversation = views.conversation_from(body.get("view", {}).get("private_metadata"))
    if conversation is None:
        return None
    return Invocation(body["user"]["id"], conversation, None, _team(body))


async def _compose(
    here: _Listening, invocation, text: str, paths: list[str], command_name: str | None
):
    if command_name and invocation is not None:
        published = {c.name: c for c in await here.platform.hooks.agent_commands(invocation)}
        if command_name not in published:
            raise PromptError(f"the agent offers no command /{command_name}")
        # G-CMD-28/30: shown without the slash, the name in bold.
        return slash_prompt(published[command_name], text), f"**{command_name}** {text}"
    draft = PromptDraft()
    draft.add_text(text)
    for path in paths:
        draft.add_text(" ")
        draft.add_file(PickedFile(path))
    shown = text + "".join(f" 📎 `{p}`" for p in paths)
    return draft.build(), shown
