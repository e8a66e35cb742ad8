"""`/rawp model [model]` (issue 30 §1): the agent's model in the thread's session, the name
autocompleted from the models the agent offers (`ConversationHooks.suggest_models`) and
handed to `ConversationHooks.set_model`; no name shows the model and the choices. Made here
and added to the `/rawp` group (adapters.discord.commands) by the bot, so the group's class
stays within its size."""

from __future__ import annotations

import discord
from discord import app_commands

from adapters.discord.commands import (
    Choices,
    RawpCommands,
    as_choices,
    invocation_of,
    within_budget,
)


def model_command(commands: RawpCommands) -> app_commands.Command:
    @app_commands.command(name="model", description="The agent's model in this thread's session")
    @app_commands.describe(model="one of the models the agent offers (none: show them)")
    async def model(interaction: discord.Interaction, model: str | None = None) -> None:
        await commands._answer(interaction, lambda inv: commands.hooks.set_model(inv, model))

    @model.autocomplete("model")
    async def models(interaction: discord.Interaction, current: str) -> Choices:
        lookup = commands.hooks.suggest_models(invocation_of(interaction), current)
        return as_choices(await within_budget(lookup))

    return model
