"""Button custom_ids that carry everything a click needs, so buttons outlive the gateway.

A Discord button's `custom_id` (at most 100 characters) is the only thing a click brings back.
It names the conversation (the thread, whose session the conversation layer has stored), the
interaction and the option: `rawp:c:<thread id>:<interaction id>:<option>`. Parts are
percent-escaped for `:` and `%`. An option id too long to fit is sent as `#<index>` into the
prompt's options; an interaction id too long is replaced by a digest the running gateway
remembers (after a restart such a button can only be answered as stale).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

MAX_CUSTOM_ID = 100
PREFIX = "rawp:c:"
# What discord.ui.DynamicItem matches clicks against (registered at startup).
TEMPLATE = re.compile(r"rawp:c:(?P<key>\d+):(?P<interaction>[^:]*):(?P<option>[^:]*)")
INPUT_OPTION = "~input"  # the "Answer…" button of a free-text prompt (opens a modal)
MODAL_PREFIX = "rawp:m:"
MODAL_TEMPLATE = re.compile(r"rawp:m:(?P<key>\d+):(?P<interaction>[^:]*)")
ANSWER_FIELD = "rawp:answer"


def _part(text: str) -> str:
    return quote(text, safe="")


@dataclass(frozen=True, slots=True)
class ChoiceId:
    key: str  # the thread (or channel) id
    interaction: str  # the interaction id, or "~<digest>" when it did not fit
    option: str  # the option id, "#<index>", or INPUT_OPTION

    def encode(self) -> str:
        return f"{PREFIX}{self.key}:{_part(self.interaction)}:{_part(self.option)}"


def digest(interaction_id: str) -> str:
    return "~" + hashlib.sha256(interaction_id.encode()).hexdigest()[:20]


def choice_id(key: str, interaction_id: str, option_id: str, index: int) -> ChoiceId:
    """The shortest faithful id: the option by id if it fits, else by index."""
    interaction = interaction_id
    by_index = _part(f"#{index}")  # the shortest the option can be ("#" is escaped as %23)
    if len(f"{PREFIX}{key}:{_part(interaction)}:{by_index}") > MAX_CUSTOM_ID:
        interaction = digest(interaction_id)
    candidate = ChoiceId(key, interaction, option_id)
    if len(candidate.encode()) <= MAX_CUSTOM_ID:
        return candidate
    return ChoiceId(key, interaction, f"#{index}")


def parse(custom_id: str) -> ChoiceId | None:
    match = TEMPLATE.fullmatch(custom_id)
    if match is None:
        return None
    return ChoiceId(match["key"], unquote(match["interaction"]), unquote(match["option"]))


def modal_id(key: str, interaction: str) -> str:
    return f"{MODAL_PREFIX}{key}:{_part(interaction)}"


def parse_modal(custom_id: str) -> tuple[str, str] | None:
    match = MODAL_TEMPLATE.fullmatch(custom_id)
    return (match["key"], unquote(match["interaction"])) if match else None
