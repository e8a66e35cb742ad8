"""The RAWP-DPS 1.0 envelope: read and write one WebSocket text frame (dps-profile §1).

Rules:

1. `parse_frame` never lets an exception other than `FrameError` out. Whatever arrives — not
   JSON, not an object, a missing or mistyped field, a payload that breaks its model, a frame
   over `max_size` — becomes a `FrameError` whose `error_code` is the `session.error` code
   (`INVALID_FRAME`, `FRAME_TOO_LARGE`) and whose message names the field at fault.
   Its `ref_message_id` names the refused frame whenever its `message_id` can be read — a
   frame over `max_size` too — so the sender can tie the refusal to what it sent (issue 28 §3).
2. Unknown keys are ignored, in the envelope and in payloads (RAWP §1.3).
3. A `type` this module does not know is not an error: its payload comes back as the plain
   dict it was, so that a relay can forward it untouched.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticSerializationError

from rawp.clock import SYSTEM_CLOCK, Clock, iso, new_id, parse_iso
from rawp.errors import FrameError
from rawp.events import EVENTS, Payload

PROTOCOL_VERSION = "rawp-dps-1.0"
# WebSocket subprotocols in order of preference (§5.3 note, R-02).
SUBPROTOCOLS = ("rawp-dps-1.0", "rawp-1.0")


class Frame(BaseModel):
    """One data-plane frame. `payload` is the event's model, or a dict for an unknown type."""

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True)

    v: Literal["rawp-dps-1.0"]
    type: str = Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")
    message_id: str
    timestamp: str
    session_id: str | None = None
    turn_id: str | None = None
    parent_id: str | None = None
    payload: Any

    @field_validator("message_id")
    @classmethod
    def _uuid(cls, value: str) -> str:
        try:
            uuid.UUID(value)
        except ValueError:
            raise ValueError("must be a UUID") from None
        return value

    @field_validator("timestamp")
    @classmethod
    def _iso8601(cls, value: str) -> str:
        try:
            parse_iso(value)
        except ValueError:
            raise ValueError("must be an ISO 8601 timestamp") from None
        return value

    @property
    def known(self) -> bool:
        """True when `type` is in the event catalogue and `payload` is its model."""
        return isinstance(self.payload, Payload)

    def to_dict(self) -> dict[str, Any]:
        """The frame as JSON-ready data: absent optional fields are left out, not null."""
        out: dict[str, Any] = {
            "v": self.v,
            "type": self.type,
            "message_id": self.message_id,
            "timestamp": self.timestamp,
        }
        for key in ("session_id", "turn_id", "parent_id"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        payload = self.payload
        out["payload"] = (
            payload.model_dump(mode="json", exclude_none=True)
            if isinstance(payload, BaseModel)
            else payload
        )
        return out


def make_frame(
    type: str,
    payload: Payload | dict[str, Any],
    *,
    session_id: str | None = None,
    turn_id: str | None = None,
    parent_id: str | None = None,
    message_id: str | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> Frame:
    """Build a frame with a fresh `message_id` and `timestamp`.

    A dict payload for a known type is validated into its model here, so a sender's mistake
    fails where it is made instead of at the far end (`FrameError`).
    """
    spec = EVENTS.get(type)
    if spec is not None and not isinstance(payload, spec.model):
        data = payload.model_dump() if isinstance(payload, BaseModel) else payload
        try:
            payload = spec.model.model_validate(data)
        except ValidationError as exc:
            raise FrameError(_describe(exc, prefix="payload")) from None
    return Frame(
        v=PROTOCOL_VERSION,
        type=type,
        message_id=message_id or new_id(),
        timestamp=iso(clock.now()),
        session_id=session_id,
        turn_id=turn_id,
        parent_id=parent_id,
        payload=payload,
    )


def encode_frame(
    type: str,
    payload: Payload | dict[str, Any],
    *,
    message_id: str,
    timestamp: str,
    session_id: str | None = None,
    turn_id: str | None = None,
    parent_id: str | None = None,
) -> bytes:
    """`dump_frame(make_frame(...))` as UTF-8 bytes, the same bytes, for a sender's hot path.

    A known type's payload is validated into its model exactly as `make_frame` does (FrameError
    when it breaks its schema) and dumped once; the envelope, whose fields the sender made
    itself, is written without building a `Frame` — that model and its validators cost several
    times the payload's own check (issue 20). An unknown type goes through `Frame` as before.
    """
    spec = EVENTS.get(type)
    if spec is None:
        frame = Frame(
            v=PROTOCOL_VERSION,
            type=type,
            message_id=message_id,
            timestamp=timestamp,
            session_id=session_id,
            turn_id=turn_id,
            parent_id=parent_id,
            payload=payload,
        )
        return orjson.dumps(frame.to_dict())
    model = spec.model
    if not isinstance(payload, model):
        data = payload.model_dump() if isinstance(payload, BaseModel) else payload
        try:  # what `model_validate` does, without its Python wrapper
            payload = model.__pydantic_validator__.validate_python(data)
        except ValidationError as exc:
            raise FrameError(_describe(exc, prefix="payload")) from None
    out: dict[str, Any] = {
        "v": PROTOCOL_VERSION,
        "type": type,
        "message_id": message_id,
        "timestamp": timestamp,
    }
    # The order and the left-out None fields of `Frame.to_dict`.
    if session_id is not None:
        out["session_id"] = session_id
    if turn_id is not None:
        out["turn_id"] = turn_id
    if parent_id is not None:
        out["parent_id"] = parent_id
    try:
        # pydantic writes the payload's JSON itself (what `model_dump(mode="json")` and orjson
        # would, in one pass and no dict between), and it closes the envelope (issue 35).
        body = model.__pydantic_serializer__.to_json(payload, exclude_none=True)
    except PydanticSerializationError:  # what orjson refuses too (a lone surrogate): its error
        out["payload"] = payload.model_dump(mode="json", exclude_none=True)
        return orjson.dumps(out)
    return b"".join((orjson.dumps(out)[:-1], b',"payload":', body, b"}"))


def dump_frame(frame: Frame) -> str:
    """Serialize a frame to the text of one WebSocket message."""
    return orjson.dumps(frame.to_dict()).decode()


def frame_size(text: str | bytes) -> int:
    """Bytes on the wire, the unit of `max_frame_size` (§4.1.5)."""
    return len(text) if isinstance(text, bytes) else len(text.encode())


def parse_frame(data: str | bytes | bytearray, *, max_size: int | None = None) -> Frame:
    """Read one frame. Raises only `FrameError` (see the rules at the top of this module)."""
    try:
        return _parse(data, max_size)
    except FrameError:
        raise
    except Exception as exc:  # a reader that crashes must not take a socket loop with it
        raise FrameError(f"unreadable frame: {type(exc).__name__}") from None


def _parse(data: str | bytes | bytearray, max_size: int | None) -> Frame:
    if not isinstance(data, str | bytes | bytearray):
        raise FrameError(f"a frame is text, not {type(data).__name__}")
    raw = bytes(data) if isinstance(data, bytearray) else data
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        obj, unreadable = None, f"frame is not valid JSON: {exc}"
    else:
        unreadable = None
    ref = _message_id(obj)
    # Read before the size is judged only to name the refused frame (rule 1): it is already in
    # memory, bounded by the socket's own message limit, and orjson reads megabytes in
    # milliseconds. A refusal without its frame's id is one the sender cannot act on.
    if max_size is not None and frame_size(raw) > max_size:
        raise FrameError(
            f"frame of {frame_size(raw):,} bytes exceeds max_frame_size {max_size:,}",
            "FRAME_TOO_LARGE",
            ref_message_id=ref,
        )
    if unreadable is not None:
        raise FrameError(unreadable)
    if not isinstance(obj, dict):
        raise FrameError(f"frame must be a JSON object, not {type(obj).__name__}")

    try:
        frame = Frame.model_validate(obj)
    except ValidationError as exc:
        raise FrameError(_describe(exc), ref_message_id=ref) from None

    spec = EVENTS.get(frame.type)
    if spec is None:
        if not isinstance(frame.payload, dict):
            raise FrameError("payload: must be an object", ref_message_id=ref)
        return frame
    try:
        frame.payload = spec.model.model_validate(frame.payload)
    except ValidationError as exc:
        raise FrameError(_describe(exc, prefix="payload"), ref_message_id=ref) from None
    if spec.session_scoped is False and frame.session_id is not None:
        raise FrameError(
            f"{frame.type} is a node frame and carries no session_id (§9.4.4)",
            ref_message_id=ref,
        )
    return frame


def _message_id(obj: Any) -> str | None:
    """The `message_id` of a frame read as JSON, when it has one that is text."""
    if isinstance(obj, dict) and isinstance(obj.get("message_id"), str):
        return obj["message_id"]
    return None


def _describe(exc: ValidationError, prefix: str = "") -> str:
    """`payload.text: Field required; type: …` — every failing field, named."""
    problems = []
    for error in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in error["loc"])
        where = f"{prefix}.{loc}" if prefix and loc else (prefix or loc or "frame")
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)


def session_error_frame(error: FrameError, session_id: str | None = None) -> Frame:
    """The `session.error` frame that answers a refused frame (dps-profile §1)."""
    return make_frame(
        "session.error",
        error.session_error_payload(),
        session_id=session_id,
        parent_id=error.ref_message_id,
    )
