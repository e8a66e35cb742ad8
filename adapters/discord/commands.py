"""The `/rawp …` application commands: the gateway's verbs, with autocomplete.

Each handler checks access, then hands platform-neutral values to `ConversationHooks` (the
conversation layer fills them in) and shows the answer to the caller only. Autocomplete asks
the hooks too, answers with at most 25 choices (Discord's maximum) and gives up after
`AUTOCOMPLETE_BUDGET_S`, so the answer always beats Discord's 3-second deadline.

| command | hook |
|---|---|
| `/rawp start node agent [worktree]` | `start_session` (node and agent autocompleted) |
| `/rawp prompt text [file] [file2] [file3]` | `prompt`; files autocompleted by `search_files` |
| `/rawp command name [args]` | `prompt` with `input_type: slash_command` (`agent_commands`) |
| `/rawp stop`, `/rawp end`, `/rawp pair`, `/rawp nodes`, `/rawp sessions` | the same names |
| `/rawp usage` | `usage` (issue 16 §4) |
| `/rawp web` | `web_link`: a one-time login link to the web edge (issue 21) |
| `/rawp busy [mode]` | `set_busy` (mode: queue or interrupt; none: show the channel's) |
| `/rawp mode [mode]` | `set_mode` (plan, ask or accept-edits; none: show the session's) |
| `/rawp model [model]` | `set_model`, `suggest_models` (adapters.discord.model_command) |
| `/rawp worktree action` | `worktree` (diff, merge or discard the session's git worktree) |
| `/rawp schedule text`, `/rawp schedules` | `schedule` (issue 30 §5: make, change, list) |
| `/rawp resume [session]` | `resume_session` (an ended session goes on in its thread; none |
| | here, or `list`: terminal conversations; `session` picks one, autocompleted; issue 30 §2) |
| `/rawp fork` | `fork_session` (a copy of the conversation goes on in a new thread) |
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Literal

import discord
from discord import app_commands

from adapters.discord.platform import DiscordPlatform, conversation_of
from gateway.platform import Invocation, MessageRef, Suggestion
from gateway.sessions.prompt import PickedFile, PromptDraft, PromptError, slash_prompt

log = logging.getLogger(__name__)

MAX_CHOICES = 25  # Discord refuses more
MAX_CHOICE_TEXT = 100  # per choice name and value
AUTOCOMPLETE_BUDGET_S = 2.0  # Discord drops an autocomplete answered after 3 s
Choices = list[app_commands.Choice[str]]


def invocation_of(interaction: discord.Interaction, message: MessageRef | None = None):
    guild = str(interaction.guild_id) if interaction.guild_id else None
    channel = interaction.channel or discord.Object(interaction.channel_id or 0)
    return Invocation(str(interaction.user.id), conversation_of(channel), message, guild)


def shorten(text: str) -> str:
    """A label within 100 characters; a long path keeps its end, where the file name is."""
    return text if len(text) <= MAX_CHOICE_TEXT else "…" + text[-(MAX_CHOICE_TEXT - 1) :]


def as_choices(suggestions: list[Suggestion]) -> Choices:
    """At most 25 choices; a value too long for Discord cannot be offered at all."""
    fitting = [s for s in suggestions if 0 < len(s.value) <= MAX_CHOICE_TEXT]
    return [app_commands.Choice(name=shorten(s.label), value=s.value) for s in fitting][
        :MAX_CHOICES
    ]


async def within_budget(lookup: Awaitable[list[Suggestion]]) -> list[Suggestion]:
    try:
        return await asyncio.wait_for(lookup, AUTOCOMPLETE_BUDGET_S)
    except TimeoutError:
        log.info("autocomplete lookup too slow; answered with no choices")
        return []


class RawpCommands(app_commands.Group):
    def __init__(self, platform: DiscordPlatform) -> None:
        super().__init__(name="rawp", description="Drive coding agents on your own machines")
        self.platform = platform

    @property
    def hooks(self):
        return self.platform.hooks  # read at each call: the conversation layer may replace them

    async def _answer(self, interaction: discord.Interaction, work) -> None:
        """Defer privately (the hook may talk to the master), then show its answer privately."""
        if await self.platform.interactions.refuse(interaction):
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        reply = await work(invocation_of(interaction))
        await interaction.followup.send(reply or "Done.", ephemeral=True)

    # --- sessions -----------------------------------------------------------------------------

    @app_commands.command(name="start", description="Start a session on one of your machines")
    @app_commands.describe(
        node="the machine",
        agent="the agent to run there",
        worktree="work in a new git worktree and branch of the workspace (issue 30 §3)",
    )
    async def start(
        self, interaction: discord.Interaction, node: str, agent: str, worktree: bool = False
    ) -> None:
        await self._answer(
            interaction, lambda inv: self.hooks.start_session(inv, node, agent, worktree)
        )

    @start.autocomplete("agent")
    async def _agents(self, interaction: discord.Interaction, current: str) -> Choices:
        if await self.platform.interactions.refuse(interaction):
            return []
        node = getattr(interaction.namespace, "node", None)
        lookup = self.hooks.suggest_agents(invocation_of(interaction), node, current)
        return as_choices(await within_budget(lookup))

    @app_commands.command(name="stop", description="Stop the running turn in this thread")
    async def stop(self, interaction: discord.Interaction) -> None:
        await self._answer(interaction, self.hooks.stop)

    @app_commands.command(name="end", description="End this thread's session")
    async def end(self, interaction: discord.Interaction) -> None:
        await self._answer(interaction, self.hooks.end)

    @app_commands.command(name="busy", description="What a message sent during a turn does here")
    @app_commands.describe(mode="queue: it waits for the turn; interrupt: it stops the turn")
    async def busy(
        self, interaction: discord.Interaction, mode: Literal["queue", "interrupt"] | None = None
    ) -> None:
        await self._answer(interaction, lambda inv: self.hooks.set_busy(inv, mode))

    @app_commands.command(name="mode", description="The agent's mode in this thread's session")
    @app_commands.describe(
        mode="plan: plan only; ask: ask before edits; accept-edits: edit without asking"
    )
    async def mode(
        self,
        interaction: discord.Interaction,
        mode: Literal["plan", "ask", "accept-edits"] | None = None,
    ) -> None:
        await self._answer(interaction, lambda inv: self.hooks.set_mode(inv, mode))

    @app_commands.command(name="worktree", description="End this session's git worktree")
    @app_commands.describe(
        action="diff: show its changes; merge: into the workspace's branch; discard: remove it"
    )
    async def worktree(
        self, interaction: discord.Interaction, action: Literal["diff", "merge", "discard"]
    ) -> None:
        await self._answer(interaction, lambda inv: self.hooks.worktree(inv, action))

    @app_commands.command(name="schedule", description="Run a prompt on a schedule")
    @app_commands.describe(
        text='"every weekday 9:00" <prompt> (or a cron expression), or pause|resume|delete <id>'
    )
    async def schedule(self, interaction: discord.Interaction, text: str) -> None:
        await self._answer(interaction, lambda inv: self.hooks.schedule(inv, text))

    @app_commands.command(name="schedules", description="List your scheduled prompts")
    async def schedules(self, interaction: discord.Interaction) -> None:
        await self._answer(interaction, lambda inv: self.hooks.schedule(inv, "list"))

    @app_commands.command(
        name="resume", description="Go on with an ended session, or pick up one from the terminal"
    )
    @app_commands.describe(
        session="a conversation from the terminal (its number, id, or pick it); list: show them"
    )
    async def resume(self, interaction: discord.Interaction, session: str | None = None) -> None:
        await self._answer(interaction, lambda inv: self.hooks.resume_session(inv, session))

    @start.autocomplete("node")
    @resume.autocomplete("session")
    async def _nodes(self, interaction: discord.Interaction, current: str) -> Choices:
        """A machine for start; for resume, a conversation from the terminal on one."""
        if await self.platform.interactions.refuse(interaction):
            return []
        command = interaction.command.name if interaction.command is not None else ""
        suggest = self.hooks.suggest_terminal if command == "resume" else self.hooks.suggest_nodes
        return as_choices(await within_budget(suggest(invocation_of(interaction), current)))

    @app_commands.command(
        name="fork", description="Go on with a copy of this conversation in a new thread"
    )
    async def fork(self, interaction: discord.Interaction) -> None:
        await self._answer(interaction, self.hooks.fork_session)

    @app_commands.command(name="pair", description="Pair a machine: get a pairing URL")
    async def pair(self, interaction: discord.Interaction) -> None:
        await self._answer(interaction, self.hooks.pair)

    @app_commands.command(name="nodes", description="List your machines")
    async def nodes(self, interaction: discord.Interaction) -> None:
        await self._answer(interaction, self.hooks.list_nodes)

    @app_commands.command(name="sessions", description="List your sessions")
    async def sessions(self, interaction: discord.Interaction) -> None:
        await self._answer(interaction, self.hooks.list_sessions)

    @app_commands.command(name="usage", description="Tokens and cost: this session, today, month")
    async def usage(self, interaction: discord.Interaction) -> None:
        await self._answer(interaction, self.hooks.usage)  # issue 16 §4: privately

    @app_commands.command(name="web", description="Open the live view: a one-time sign-in link")
    async def web(self, interaction: discord.Interaction) -> None:
        await self._answer(interaction, self.hooks.web_link)  # ephemeral: the link is a login

    # --- prompts ------------------------------------------------------------------------------

    @app_commands.command(name="prompt", description="Send a prompt, picking files by name")
    @app_commands.describe(text="what to ask", file="a file to refer to")
    async def prompt(
        self,
        interaction: discord.Interaction,
        text: str,
        file: str | None = None,
        file2: str | None = None,
        file3: str | None = None,
    ) -> None:
        if await self.platform.interactions.refuse(interaction):
            return
        draft = PromptDraft()
        draft.add_text(text)
        paths = [p for p in (file, file2, file3) if p]
        for path in paths:
            draft.add_text(" ")
            draft.add_file(PickedFile(path))
        shown = text + "".join(f" 📎 `{p}`" for p in paths)
        try:
            request = draft.build()
        except PromptError as refused:
            await interaction.response.send_message(f"⚠️ {refused}", ephemeral=True)
            return
        await self._post_prompt(interaction, request, shown)

    @prompt.autocomplete("file")
    @prompt.autocomplete("file2")
    @prompt.autocomplete("file3")
    async def _files(self, interaction: discord.Interaction, current: str) -> Choices:
        if await self.platform.interactions.refuse(interaction):
            return []

        async def lookup() -> list[Suggestion]:
            found = await self.hooks.search_files(invocation_of(interaction), current)
            return [Suggestion(c.path, c.path) for c in found]

        return as_choices(await within_budget(lookup()))

    @app_commands.command(name="command", description="Run one of the agent's slash commands")
    @app_commands.describe(name="the agent's command", args="its arguments")
    async def command(
        self, interaction: discord.Interaction, name: str, args: str | None = None
    ) -> None:
        if await self.platform.interactions.refuse(interaction):
            return
        published = {c.name: c for c in await self.hooks.agent_commands(invocation_of(interaction))}
        if name.removeprefix("/") not in published:
            await interaction.response.send_message(
                f"The agent offers no command `/{name}` here.", ephemeral=True
            )
            return
        try:
            request = slash_prompt(published[name.removeprefix("/")], args or "")
        except PromptError as refused:
            await interaction.response.send_message(f"⚠️ {refused}", ephemeral=True)
            return
        # G-CMD-28/30: shown without the slash, the name in bold.
        shown = f"**{name.removeprefix('/')}** {args or ''}".rstrip()
        await self._post_prompt(interaction, request, shown)

    @command.autocomplete("name")
    async def _commands(self, interaction: discord.Interaction, current: str) -> Choices:
        if await self.platform.interactions.refuse(interaction):
            return []

        async def lookup() -> list[Suggestion]:
            published = await self.hooks.agent_commands(invocation_of(interaction))
            typed = current.removeprefix("/")
            matching = sorted(
                (c for c in published if c.name.startswith(typed)),  # G-CMD-14: by prefix
                key=lambda c: (c.category or "", c.name),  # G-CMD-16
            )
            return [
                Suggestion(f"/{c.name} — {c.description}".rstrip(" —"), c.name) for c in matching
            ]

        return as_choices(await within_budget(lookup()))

    async def _post_prompt(self, interaction: discord.Interaction, request, shown: str) -> None:
        """Show the prompt in the thread (⏳/✅ land on it), then hand it to the session."""
        text = f"<@{interaction.user.id}>: {shown}"[: self.platform.limits.max_message_length]
        await interaction.response.send_message(
            text, allowed_mentions=discord.AllowedMentions.none()
        )
        posted = await interaction.original_response()
        invocation = invocation_of(interaction)
        message = MessageRef(invocation.conversation, str(posted.id))
        invocation = Invocation(
            invocation.user_id, invocation.conversation, message, invocation.workspace_id
        )
        reply = await self.hooks.prompt(invocation, request)
        if reply:
            await interaction.followup.send(reply, ephemeral=True)
