"""The agent's modes as Discord buttons (issue 30 §1; gateway.sessions.mode_buttons).

Each button's custom_id is `rawp:mode:<chat name>`: the thread the message is in names the
session, so that is all a press needs, also after a gateway restart (the class is a
`discord.ui.DynamicItem` registered when the bot starts). The current mode is the primary
(blurple) button, the others secondary. A press is `/rawp mode <name>`: its answer, or its
refusal, goes to the presser only.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import discord

from gateway.platform import ModeRow

PREFIX = "rawp:mode:"
TEMPLATE = re.compile(r"rawp:mode:(?P<mode>[a-z-]{1,40})")
ModeClick = Callable[[discord.Interaction, str], Awaitable[None]]


def mode_button_class(on_click: ModeClick) -> type[discord.ui.DynamicItem]:
    """A DynamicItem class bound to one platform's press handler (registered at startup)."""

    class ModeButton(discord.ui.DynamicItem[discord.ui.Button], template=TEMPLATE.pattern):
        def __init__(self, mode: str, current: bool = False) -> None:
            style = discord.ButtonStyle.primary if current else discord.ButtonStyle.secondary
            super().__init__(discord.ui.Button(label=mode, style=style, custom_id=PREFIX + mode))
            self.mode = mode

        @classmethod
        async def from_custom_id(cls, interaction, item, match, /):
            return cls(match["mode"])

        async def callback(self, interaction: discord.Interaction) -> None:
            await on_click(interaction, self.mode)

    return ModeButton


def mode_view(button_class: type[discord.ui.DynamicItem], row: ModeRow) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    for name in row.names:
        view.add_item(button_class(name, name == row.current))
    return view
