"""What rendering asks of the chat: the operations `RenderCore` returns (issue 29 §3).

The core (gateway.rendering.render_core) turns frames into a list of these and does nothing
itself; the driver (gateway.rendering.render `SessionRenderer`) performs them in order through
the `Poster`, the platform and its timers. Each is a small frozen value, so a test asserts the
list a frame makes without a platform, a socket or an event loop.

Content (a failure propagates, as a failed post always did): `Post`, `Edit`, `Hidden`, `Upload`.
Decorations (best effort: a failure is logged, the content goes on): `React`, `Unreact`,
`Status`, `ClearStatus`, `DeleteInterim`. The rest hand a turn's end or an approval to the
driver's collaborators (typing heartbeat, ⏳ timer, interaction flow, busy queue, the prompt's
waiting console).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.platform import MessageRef
from rawp import events as ev
from rawp.frames import Frame

if TYPE_CHECKING:
    from gateway.rendering.turn import Turn


@dataclass(frozen=True)
class Post:
    """One message, under the frame's next post key unless `key` names one; `keep` names the
    slot ("progress") whose message the core edits in place later (the driver hands the
    posted `MessageRef` back through `RenderCore.keep`)."""

    text: str
    key: str | None = None
    keep: str | None = None


@dataclass(frozen=True)
class Edit:
    """`message` should read `text`. `coalesce`: one of many edits of the progress message
    during a turn, which the driver sends at most once per `status_every_s`, the latest one
    (gateway.rendering.status_line `ProgressEdits`); without it the edit goes out now and
    replaces a held one."""

    message: MessageRef
    text: str
    coalesce: bool = False


@dataclass(frozen=True)
class Hidden:
    """Text the reader reveals (thinking)."""

    title: str
    text: str


@dataclass(frozen=True)
class Upload:
    """A file the agent sent; `refused_text` is posted instead when the platform refuses it."""

    name: str
    mime_type: str
    data: bytes
    refused_text: str


@dataclass(frozen=True)
class React:
    message: MessageRef
    emoji: str


@dataclass(frozen=True)
class Unreact:
    message: MessageRef
    emoji: str


@dataclass(frozen=True)
class Status:
    """The status line should read `text` (coalesced by the driver's `StatusLine`); the current
    turn's interim status message follows it if one is shown."""

    text: str | None


@dataclass(frozen=True)
class ClearStatus:
    pass


@dataclass(frozen=True)
class StopTyping:
    turn: Turn


@dataclass(frozen=True)
class AskChoice:
    """An `agent.interaction.request` becomes buttons (gateway.approvals.interactions)."""

    frame: Frame
    request: ev.InteractionRequest
    user_id: str | None
    tool: ev.ToolInvokeRequest | None


@dataclass(frozen=True)
class WentOn:
    """The agent went on: prompts it no longer waits for are closed as answered elsewhere."""

    invocation_id: str | None = None
    left_awaiting_input: bool = False


@dataclass(frozen=True)
class CloseTurnPrompts:
    turn_id: str


@dataclass(frozen=True)
class DisarmWorking:
    """The ⏳ timer of `turn` stops (a ⏳ in flight is waited for)."""

    turn: Turn


@dataclass(frozen=True)
class DeleteInterim:
    """The turn's interim status message goes (one posted before a restart is found by key)."""

    turn: Turn


@dataclass(frozen=True)
class QueueRefused:
    """A queued prompt was refused: its 🕒 comes off (gateway.sessions.busy)."""

    prompt_message_id: str


@dataclass(frozen=True)
class Resolve:
    """The prompt `prompt_message_id` was rendered to its end with `outcome`."""

    prompt_message_id: str | None
    outcome: str


Operation = (
    Post
    | Edit
    | Hidden
    | Upload
    | React
    | Unreact
    | Status
    | ClearStatus
    | StopTyping
    | AskChoice
    | WentOn
    | CloseTurnPrompts
    | DisarmWorking
    | DeleteInterim
    | QueueRefused
    | Resolve
)
