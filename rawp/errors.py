"""Errors that carry a RAWP `error_code` (RAWP §7.1, §4.1.7).

Two kinds, as h11 separates them:

* `RawpError` and its HTTP subclasses: a request was refused. Servers turn them into the §7.1
  body `{"error_code": ..., "message": ...}` (plus the §4.1.7 extras) with the class's status.
* `FrameError`: a peer sent a data-plane frame we cannot accept. Socket loops turn it into a
  `session.error` frame (dps-profile §1) and keep the connection up.

Nothing here knows about Quart or sockets; servers only call `status` and `to_body()`.
"""

from __future__ import annotations

from typing import Any


class RawpError(Exception):
    """A refusal with a machine-readable code and a human-readable message (§7.1)."""

    status: int = 500
    default_code: str = "INTERNAL_ERROR"

    def __init__(
        self,
        message: str,
        error_code: str | None = None,
        *,
        status: int | None = None,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code or self.default_code
        if status is not None:
            self.status = status
        self.headers: dict[str, str] = dict(headers or {})
        # §4.1.7 extras such as `field_errors` or `current_config_version`.
        self.extra: dict[str, Any] = extra

    def to_body(self) -> dict[str, Any]:
        """The JSON body every HTTP error carries (§7.1 X-ERR-01)."""
        return {"error_code": self.error_code, "message": self.message, **self.extra}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.error_code!r}, {self.message!r})"


class BadRequest(RawpError):
    """400: a missing parameter, malformed JSON or UUID (X-ERR-02)."""

    status = 400
    default_code = "BAD_REQUEST"


class Unauthorized(RawpError):
    """401: an expired or forged token, an invalid upgrade ticket (X-ERR-03)."""

    status = 401
    default_code = "UNAUTHORIZED"


class Forbidden(RawpError):
    """403: a command off the white-list, a path outside the workspace (X-ERR-04)."""

    status = 403
    default_code = "FORBIDDEN"


class NotFound(RawpError):
    """404: an unknown session or node — also what another user's ids look like (X-ERR-05)."""

    status = 404
    default_code = "NOT_FOUND"


class Conflict(RawpError):
    """409: a session already RUNNING, a stale config version (X-ERR-06)."""

    status = 409
    default_code = "CONFLICT"


class PayloadTooLarge(RawpError):
    """413: a request body above the server's limit."""

    status = 413
    default_code = "PAYLOAD_TOO_LARGE"


class UpgradeRequired(RawpError):
    """426: no WebSocket subprotocol we speak was offered (§5.3, A-16)."""

    status = 426
    default_code = "UNSUPPORTED_SUBPROTOCOL"


class Unprocessable(RawpError):
    """422: a config update with invalid fields (X-ERR-07, §4.1.7)."""

    status = 422
    default_code = "CONFIG_VALIDATION_FAILED"


class TooManyRequests(RawpError):
    """429: the caller's rate budget is spent; `Retry-After` says for how long (X-ERR-08)."""

    status = 429
    default_code = "RATE_LIMITED"

    def __init__(self, message: str, retry_after: float, error_code: str | None = None) -> None:
        # Retry-After takes whole seconds; never advertise 0, which invites a tight loop.
        seconds = max(1, int(retry_after + 0.999))
        super().__init__(message, error_code, headers={"Retry-After": str(seconds)})
        self.retry_after = retry_after


class InternalError(RawpError):
    """500: something on our side failed; the message never carries a stack trace."""

    status = 500
    default_code = "INTERNAL_ERROR"


class ServiceUnavailable(RawpError):
    """503: e.g. a session asked for before both config scopes were synced (X-ERR-10, K-03)."""

    status = 503
    default_code = "SERVICE_UNAVAILABLE"


class FrameError(RawpError):
    """A data-plane frame that cannot be accepted (dps-profile §1).

    `error_code` is the `session.error` code: `INVALID_FRAME` or `FRAME_TOO_LARGE`.
    `ref_message_id` is the offending frame's `message_id` when it could be read.
    """

    status = 400
    default_code = "INVALID_FRAME"

    def __init__(
        self, message: str, error_code: str = "INVALID_FRAME", ref_message_id: str | None = None
    ) -> None:
        super().__init__(message, error_code)
        self.ref_message_id = ref_message_id

    def session_error_payload(self) -> dict[str, Any]:
        """The payload of the `session.error` frame that answers the bad frame."""
        payload: dict[str, Any] = {"code": self.error_code, "message": self.message}
        if self.ref_message_id is not None:
            payload["ref_message_id"] = self.ref_message_id
        return payload


class FileRefError(ValueError):
    """A file-reference token that cannot be written (DPS §16.2.1, A-31)."""
