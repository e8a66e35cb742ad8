"""The agent's modes as buttons on the session's thread (issue 30 §1; gateway.rendering.render
rule 11).

Rules:

1. When the agent announces modes (`session.capabilities` `modes`), the thread gets one message,
   "🎛 Agent mode", with a button per chat mode the agent offers (gateway.rendering.render_core
   `CHAT_MODES`, matched as the client matches them: by id or name, with case, spaces and
   punctuation ignored) and
   the current one marked. An agent offering none of them gets no buttons (and no message).
2. It is posted once, under the post key `MODE_KEY` (gateway.rendering.posting), so a restarted
   gateway finds it and edits it rather than posting again.
3. It is edited only when what it shows changes (another current mode, other modes offered):
   one platform call per change, through the same budgeted platform as every post.
4. A press is `/rawp mode <name>` (the adapters call `ConversationHooks.set_mode`): the owner
   or an approver only, routed to the replica that holds the session, answered by the revived
   session after a restart. The button carries only the mode's name; the thread it is in names
   the session.
"""

from __future__ import annotations

from gateway.platform import MessageRef, ModeRow
from gateway.rendering.posting import Poster
from gateway.rendering.render_core import CHAT_MODES
from rawp import events as ev

MODE_KEY = "mode-buttons"
TITLE = "🎛 Agent mode"


def _folded(text: str) -> str:
    """As the client matches a mode (client.agents.modes): case, spaces and punctuation out."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def offered_row(caps: ev.Capabilities) -> ModeRow | None:
    """The chat modes `caps` offers, and the current one (rule 1); None: none offered."""
    by_key: dict[str, str] = {}  # a folded id or name the agent offers → its mode id
    for mode in caps.modes or []:
        by_key.setdefault(_folded(mode.id), mode.id)
        by_key.setdefault(_folded(mode.name), mode.id)
    chosen = {n: by_key.get(_folded(i)) or by_key.get(_folded(n)) for n, i in CHAT_MODES.items()}
    row = tuple(name for name, mode_id in chosen.items() if mode_id is not None)
    if not row:
        return None
    current = next((n for n in row if chosen[n] == caps.current_mode), None)
    return ModeRow(row, current)


def row_text(row: ModeRow) -> str:
    shown = f"`{row.current}`" if row.current else "the agent's own"
    return f"{TITLE}: {shown} — press to switch (owner and approvers only)."


class ModeButtons:
    """The one mode message of a session's thread (rules 2–3)."""

    def __init__(self, poster: Poster) -> None:
        self._poster = poster
        self._message: MessageRef | None = None
        self._shown: ModeRow | None = None

    async def seen(self, caps: ev.Capabilities) -> None:
        row = offered_row(caps)
        if row is None or row == self._shown:
            return
        text = row_text(row)
        if self._message is None and self._shown is None:
            message, posted_now = await self._poster.send_modes(text, row, MODE_KEY)
            self._message, self._shown = message, row
            if posted_now or message is None:
                return
        if self._message is not None:  # rule 3 (and once after a restart: it may be stale)
            poster = self._poster
            await poster.platform.show_modes(
                poster.conversation, text, row, MODE_KEY, self._message
            )
        self._shown = row
