"""Interaction prompts as Discord buttons, and the clicks that answer them.

- Each option is a button whose custom_id says which thread, interaction and option it answers
  (adapters.discord.custom_ids); the buttons are a `discord.ui.DynamicItem` registered when the
  bot starts, so a click on a prompt posted before a restart is still routed.
- A click is acknowledged at once (a deferred update, inside Discord's 3 s), then handed to
  the gateway's prompt board (gateway.approvals.prompt_board) for that interaction in that
  thread — keyed by (thread, interaction), not by message, so a prompt re-posted after a
  reconnect and the old prompt answer the same wait.
- A click nobody waits for goes to `ConversationHooks.stale_choice`; its answer is shown to the
  clicker only.
- A free-text prompt (`kind: input`, no options) gets one "Answer…" button that opens a modal.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import discord

from adapters.discord import custom_ids
from gateway.platform import InteractionPrompt

log = logging.getLogger(__name__)

ClickHandler = Callable[[discord.Interaction, custom_ids.ChoiceId], Awaitable[None]]
MAX_LABEL = 80
STYLES = {
    "allow_once": discord.ButtonStyle.success,
    "allow_always": discord.ButtonStyle.success,
    "reject_once": discord.ButtonStyle.danger,
    "reject_always": discord.ButtonStyle.danger,
}


def choice_button_class(on_click: ClickHandler) -> type[discord.ui.DynamicItem]:
    """A DynamicItem class bound to one platform's click handler (registered at startup)."""

    class ChoiceButton(
        discord.ui.DynamicItem[discord.ui.Button], template=custom_ids.TEMPLATE.pattern
    ):
        def __init__(self, choice: custom_ids.ChoiceId, label: str = "…", style=None) -> None:
            super().__init__(
                discord.ui.Button(
                    label=label[:MAX_LABEL],
                    style=style or discord.ButtonStyle.secondary,
                    custom_id=choice.encode(),
                )
            )
            self.choice = choice

        @classmethod
        async def from_custom_id(cls, interaction, item, match, /):
            return cls(custom_ids.parse(item.custom_id))

        async def callback(self, interaction: discord.Interaction) -> None:
            await on_click(interaction, self.choice)

    return ChoiceButton


def prompt_view(button_class, key: str, prompt: InteractionPrompt) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    if not prompt.options:
        answer = custom_ids.ChoiceId(key, prompt.interaction_id, custom_ids.INPUT_OPTION)
        view.add_item(button_class(answer, "Answer…", discord.ButtonStyle.primary))
        return view
    for index, option in enumerate(prompt.options[:25]):
        choice = custom_ids.choice_id(key, prompt.interaction_id, option.option_id, index)
        view.add_item(button_class(choice, option.label, STYLES.get(option.kind or "")))
    return view


class AnswerModal(discord.ui.Modal):
    """The free-text answer to a `kind: input` prompt."""

    def __init__(self, key: str, interaction_id: str, question: str, on_answer) -> None:
        super().__init__(
            title="Answer the agent", custom_id=custom_ids.modal_id(key, interaction_id)
        )
        self.answer = discord.ui.TextInput(
            label=question[:45] or "Answer",
            custom_id=custom_ids.ANSWER_FIELD,
            style=discord.TextStyle.paragraph,
        )
        self.add_item(self.answer)
        self._on_answer = on_answer

    async def on_submit(self, interaction: discord.Interaction) -> None:
        await self._on_answer(interaction, self.answer.value)
