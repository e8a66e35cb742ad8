"""`/rawp model [name]` (issue 30 §1): the verb behind `ChatCommands.set_model`, its
autocomplete, and the model sent again to a revived session.

Rules:

1. Only the session's owner, or a configured approver, changes its model (the mode command's
   rule 1, gateway.sessions.mode_command); anyone else is told so and nothing is sent.
2. No name shows the model the thread knows and the ones the agent offers (the store's
   `session_models`, written by the renderer from `session.capabilities`, so any replica
   answers). A name is matched to an offered id as the client matches it (case, spaces and
   punctuation ignored); one the agent does not offer is refused with the offered ones named.
   Before the agent has announced any models (an ACP agent that has not started) the name is
   sent as typed and the agent answers: `session.error` `INVALID_MODEL` or
   `UNSUPPORTED_CONTROL`, shown in the thread as any refusal.
3. The model is sent as `control.model.set`; the thread shows "Model: <id>" once the agent's
   `session.capabilities` say so (gateway.rendering.render_core `ModelLine`). The reply says the
   model was asked for, not that it is set.
4. A revived session (a gateway restart) gets the stored chosen model again (`model_again`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from gateway.edge_client import EdgeApiError
from gateway.platform import Invocation, Suggestion
from gateway.sessions.chat_commands import SESSION_ENDED, refusal
from gateway.sessions.mode_command import changeable

if TYPE_CHECKING:
    from gateway.sessions.conversations import ConversationService
    from gateway.sessions.live import ConnectedSession
    from gateway.storage.conversation_store import ConversationStore

log = logging.getLogger(__name__)


class ModelCommands:
    """The model verbs of `ConversationService` (the hooks `set_model`, `suggest_models`)."""

    async def set_model(self, invocation: Invocation, model: str | None) -> str | None:
        return await set_model(self, invocation, model)  # type: ignore[arg-type]

    async def suggest_models(self, invocation: Invocation, typed: str) -> list[Suggestion]:
        return await suggest_models(self, invocation, typed)  # type: ignore[arg-type]


def _folded(text: str) -> str:
    """As the client matches a model (client.agents.modes): case, spaces and punctuation out."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def _listed(offered: list[str]) -> str:
    return " | ".join(f"`{model}`" for model in offered) or "none announced yet"


async def set_model(service: ConversationService, invocation: Invocation, model: str | None) -> str:
    binding = await changeable(service, invocation, "model")
    if isinstance(binding, str):
        return binding  # rule 1
    known = await service.store.session_model(binding.session_id)
    offered = known.offered if known else []
    if not model or not model.strip():  # rule 2
        current = f"`{known.current}`" if known and known.current else "the agent's own"
        return f"Model: {current}. Choose one with the model command: {_listed(offered)}."
    wanted = model.strip()
    if offered:
        match = next((m for m in offered if _folded(m) == _folded(wanted)), None)
        if match is None:
            return f"❌ This agent offers {_listed(offered)}, not “{wanted}”."
        wanted = match
    try:
        live = await service._revive(binding)
        await live.set_model(wanted)  # rule 3
    except EdgeApiError as exc:
        return refusal(exc)
    except ConnectionError:
        return SESSION_ENDED
    return f"Asked the agent for model `{wanted}`; the thread shows it once the agent has switched."


async def suggest_models(
    service: ConversationService, invocation: Invocation, typed: str
) -> list[Suggestion]:
    """The offered models that contain what was typed (autocomplete)."""
    binding = await service.settled_binding(invocation.conversation)
    if binding is None or binding.ended:
        return []
    known = await service.store.session_model(binding.session_id)
    wanted = _folded(typed)
    return [Suggestion(m, m) for m in (known.offered if known else []) if wanted in _folded(m)]


async def model_again(store: ConversationStore, live: ConnectedSession) -> None:
    """Rule 4: the chosen model, known to the thread and sent again to the revived session."""
    known = await store.session_model(live.session_id)
    if known is None or known.chosen is None:
        return
    live.renderer.model_line.shown = known.chosen
    try:
        await live.set_model(known.chosen)
    except ConnectionError:  # the link's own end is reported by its pump
        log.info("session %s: its model could not be sent again", live.session_id)
