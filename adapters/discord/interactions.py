"""What Discord users press and submit, answered for `DiscordPlatform`: access refusals, prompt
buttons (routed by their custom_id, also after a restart), the mode buttons (issue 30 §1:
`hooks.set_mode`), the free-text modal, and each user's latest click in a thread (an ephemeral
note can only answer an interaction).

A press goes to the prompt board the platform posted its prompt on (gateway.approvals.prompt_board);
a press nobody here waits for goes to `hooks.stale_choice`, which may ask another replica
(gateway.replicas.cluster_routing).
"""

from __future__ import annotations

from collections.abc import Callable

import discord

from adapters.discord import custom_ids
from adapters.discord.access import REFUSAL, AccessPolicy, where_discord
from adapters.discord.choices import AnswerModal, choice_button_class
from adapters.discord.mode_buttons import mode_button_class
from gateway.approvals.prompt_board import PromptBoard, option_of
from gateway.platform import (
    Choice,
    ConversationHooks,
    ConversationRef,
    Invocation,
    StaleChoice,
)

NO_MENTIONS = discord.AllowedMentions.none()


class DiscordInteractions:
    def __init__(
        self,
        prompt_board: PromptBoard,
        policy: AccessPolicy,
        hooks: Callable[[], ConversationHooks],
        conversation_of: Callable[[discord.abc.Snowflake], ConversationRef],
    ) -> None:
        self.prompt_board = prompt_board
        self.policy = policy
        self._hooks = hooks  # read at each press: the conversation layer may replace them
        self._conversation_of = conversation_of
        self.digests: dict[str, str] = {}  # digest → interaction id (ids too long to fit)
        self.button_class = choice_button_class(self._on_click)
        self.mode_button_class = mode_button_class(self._on_mode)  # issue 30 §1
        # (thread id, user id) → that user's latest click there, for ephemeral notes
        self.clicks: dict[tuple[str, str], discord.Interaction] = {}

    def register(self, client: discord.Client) -> None:
        """Route clicks on every prompt button, including those posted before a restart."""
        client.add_dynamic_items(self.button_class, self.mode_button_class)

    def interaction_id(self, encoded: str) -> str:
        return self.digests.get(encoded, encoded)

    def allows(self, interaction: discord.Interaction) -> bool:
        return self.policy.allows(
            where_discord(interaction.guild_id, interaction.channel, interaction.user)
        )

    async def refuse(self, interaction: discord.Interaction) -> bool:
        """Refuse a user outside the allowed guilds/channels/roles, politely and privately."""
        if self.allows(interaction):
            return False
        if interaction.type is discord.InteractionType.autocomplete:
            await interaction.response.autocomplete([])
        else:
            await interaction.response.send_message(REFUSAL, ephemeral=True)
        return True

    async def _on_click(self, interaction: discord.Interaction, choice: custom_ids.ChoiceId):
        """A button was clicked (routed by its custom_id, also after a restart)."""
        if await self.refuse(interaction):
            return
        user_id = str(interaction.user.id)
        waiting = self.prompt_board.find(choice.key, self.interaction_id(choice.interaction))
        if choice.option == custom_ids.INPUT_OPTION:
            question = waiting.prompt.prompt if waiting else "Answer"
            modal = AnswerModal(choice.key, choice.interaction, question, self._on_answer)
            await interaction.response.send_modal(modal)
            return
        option_id = option_of(waiting.prompt if waiting else None, choice.option)
        await self._deliver(interaction, choice.key, choice.interaction, Choice(user_id, option_id))

    async def _on_mode(self, interaction: discord.Interaction, mode: str) -> None:
        """A mode button: `/rawp mode <mode>` in its thread, answered to the presser only (a
        stranger's refusal too); the hook routes it to the session's replica."""
        if await self.refuse(interaction):
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        conversation = self._conversation_of(
            interaction.channel or discord.Object(interaction.channel_id or 0)
        )
        invocation = Invocation(
            str(interaction.user.id), conversation, workspace_id=_guild(interaction)
        )
        reply = await self._hooks().set_mode(invocation, mode)
        await interaction.followup.send(
            reply or "Done.", ephemeral=True, allowed_mentions=NO_MENTIONS
        )

    async def _on_answer(self, interaction: discord.Interaction, text: str) -> None:
        parsed = custom_ids.parse_modal(interaction.data.get("custom_id", ""))
        if parsed is not None:
            key, interaction_id = parsed
            choice = Choice(str(interaction.user.id), text=text)
            await self._deliver(interaction, key, interaction_id, choice)

    async def _deliver(
        self, interaction: discord.Interaction, key: str, interaction_id: str, choice: Choice
    ) -> None:
        interaction_id = self.interaction_id(interaction_id)
        if self.prompt_board.find(key, interaction_id) is None:
            # Acknowledged at once: the hook may ask another replica
            # (gateway.replicas.cluster_routing).
            await interaction.response.defer()
            conversation = self._conversation_of(interaction.channel or discord.Object(int(key)))
            invocation = Invocation(choice.user_id, conversation, workspace_id=_guild(interaction))
            stale = StaleChoice(invocation, interaction_id, choice)
            note = await self._hooks().stale_choice(stale)
            if note:
                await interaction.followup.send(note, ephemeral=True, allowed_mentions=NO_MENTIONS)
            return
        # Acknowledge within Discord's 3 s; the core answers (or refuses) through this click.
        await interaction.response.defer()
        self.clicks[(key, choice.user_id)] = interaction
        self.prompt_board.answer(key, interaction_id, choice)


def _guild(interaction: discord.Interaction) -> str | None:
    return str(interaction.guild_id) if interaction.guild_id else None
