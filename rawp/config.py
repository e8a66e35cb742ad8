"""The two config scopes a client reports to its master (RAWP §4.1), as data.

`Limits` is the `limits` object of `PUT /v1/nodes/config/limits` (§4.1.5); `capabilities` is a
list of identifiers (§4.1.6). `PinnedConfig` is what a session is bound to at init (§4.1.8):
both snapshots and their versions, immutable for the session's life.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

LIMIT_FIELDS = (
    "rate_limit",
    "max_frame_size",
    "reattach_window",
    "max_buffer_size",
    "buffer_overflow_policy",
)


class Limits(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    rate_limit: int = Field(gt=0)  # HTTP requests per second the client accepts
    max_frame_size: int = Field(ge=1024)  # bytes of one WebSocket frame
    reattach_window: int = Field(ge=0)  # seconds DETACHED before TERMINATED; 0 = no detach
    max_buffer_size: int = Field(gt=0)  # bytes buffered while detached
    buffer_overflow_policy: Literal["RING", "DROP"]


DEFAULT_LIMITS = Limits(
    rate_limit=50,
    max_frame_size=1024 * 1024,
    reattach_window=300,
    max_buffer_size=16 * 1024 * 1024,
    buffer_overflow_policy="RING",
)


class PinnedConfig(BaseModel):
    """The config a session was initialised with (§4.1.8, M-PIN-02/04)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    limits: Limits
    capabilities: tuple[str, ...] = ()
    limits_version: int = Field(ge=1)
    capabilities_version: int = Field(ge=1)
