"""The §4.1.5 / §4.1.6 validation tables, as pure functions over the decoded JSON body.

Precedence (K-05): first every missing field → `400 CONFIG_FIELD_MISSING`; then every invalid
field → `422`; only a body that passes both meets the version check (`409`, config_scopes).
Every failed field is reported (M-CFG-20); each `field_errors[]` item carries `field` (JSON
path), `constraint`, `reason` and `code` (the table's error code). The top-level `error_code`
is that code when exactly one field failed, `CONFIG_VALIDATION_FAILED` when several did.

Decisions where the tables are silent (docs/operations-master.md):
- Missing `config_version`, `effective_at`, `limits` (each of its five fields is listed) or
  `capabilities` is `CONFIG_FIELD_MISSING` like a missing limits field (A-08); `null` counts as
  present-and-invalid.
- `config_version` that is not a positive integer is a 422 `INVALID_CONFIG_VERSION` (K-05).
- An `effective_at` that is not ISO 8601 is reported under the row's only code,
  `EFFECTIVE_AT_IN_FUTURE`, with the constraint `ISO_8601`; a time without a zone is UTC.
- Integers are JSON integers: `5.0`, `"5"` and `true` are refused.
- `max_buffer_size` ≥ `max_frame_size` is reported on `limits.max_buffer_size` (A-07), and
  only when both are valid integers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from rawp.clock import parse_iso
from rawp.config import LIMIT_FIELDS
from rawp.errors import BadRequest, Unprocessable

FUTURE_TOLERANCE = timedelta(seconds=30)  # §4.1.5 effective_at
CAPABILITY = re.compile(r"[A-Za-z0-9_.\-]{1,128}")  # §4.1.6 capabilities[*]
MISSING = "CONFIG_FIELD_MISSING"
SEVERAL = "CONFIG_VALIDATION_FAILED"


@dataclass(frozen=True)
class FieldError:
    field: str
    constraint: str
    reason: str
    code: str

    def as_dict(self) -> dict[str, str]:
        return {
            "field": self.field,
            "constraint": self.constraint,
            "reason": self.reason,
            "code": self.code,
        }


@dataclass(frozen=True)
class Envelope:
    """The validated common part of a scope update."""

    config_version: int
    effective_at: datetime
    reason: str | None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _missing(fields: Iterable[str]) -> BadRequest | None:
    errors = [
        FieldError(f, "REQUIRED", "MUST be present (full replacement)", MISSING).as_dict()
        for f in fields
    ]
    if not errors:
        return None
    names = ", ".join(e["field"] for e in errors)
    return BadRequest(f"missing required field(s): {names}", MISSING, field_errors=errors)


def _unprocessable(errors: list[FieldError]) -> Unprocessable:
    code = errors[0].code if len(errors) == 1 else SEVERAL
    summary = "; ".join(f"{e.field}: {e.reason}" for e in errors)
    return Unprocessable(
        f"the config update is invalid: {summary}",
        code,
        field_errors=[e.as_dict() for e in errors],
    )


def _check_envelope(body: dict[str, Any], now: datetime, errors: list[FieldError]) -> None:
    version = body["config_version"]
    if not _is_int(version) or version < 1:
        errors.append(
            FieldError(
                "config_version",
                "POSITIVE_INTEGER",
                "MUST be a positive integer",
                "INVALID_CONFIG_VERSION",
            )
        )
    effective_at = body["effective_at"]
    try:
        moment = parse_iso(effective_at) if isinstance(effective_at, str) else None
    except ValueError:
        moment = None
    if moment is None:
        errors.append(
            FieldError(
                "effective_at",
                "ISO_8601",
                "MUST be an ISO 8601 timestamp",
                "EFFECTIVE_AT_IN_FUTURE",
            )
        )
    elif moment > now + FUTURE_TOLERANCE:
        errors.append(
            FieldError(
                "effective_at",
                "NOT_AFTER:now+30s",
                "MUST NOT be later than the server's time plus 30 seconds",
                "EFFECTIVE_AT_IN_FUTURE",
            )
        )


def _check_reason(body: dict[str, Any]) -> None:
    reason = body.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise BadRequest("reason: must be a string when given", "INVALID_REQUEST")


def _limit_rules() -> list[tuple[str, Callable[[Any], str | None], str, str]]:
    """(limit name, check → failed constraint or None, reason, code) for each §4.1.5 row."""

    def positive(value: Any) -> str | None:
        return None if _is_int(value) and value > 0 else "POSITIVE_INTEGER"

    def frame(value: Any) -> str | None:
        if not _is_int(value):
            return "INTEGER"
        return None if value >= 1024 else "MIN_VALUE:1024"

    def window(value: Any) -> str | None:
        if not _is_int(value):
            return "INTEGER"
        return None if value >= 0 else "MIN_VALUE:0"

    def policy(value: Any) -> str | None:
        return None if value in ("RING", "DROP") and isinstance(value, str) else "ENUM:RING|DROP"

    return [
        ("rate_limit", positive, "MUST be a positive integer", "INVALID_RATE_LIMIT"),
        (
            "max_frame_size",
            frame,
            "MUST be an integer of at least 1024",
            "FRAME_SIZE_TOO_SMALL",
        ),
        (
            "reattach_window",
            window,
            "MUST be an integer of at least 0",
            "INVALID_REATTACH_WINDOW",
        ),
        (
            "max_buffer_size",
            positive,
            "MUST be a positive integer",
            "BUFFER_SMALLER_THAN_FRAME",
        ),
        (
            "buffer_overflow_policy",
            policy,
            'MUST be "RING" or "DROP"',
            "INVALID_OVERFLOW_POLICY",
        ),
    ]


def _check_limits(limits: dict[str, Any], prefix: str, errors: list[FieldError]) -> None:
    for name, check, reason, code in _limit_rules():
        failed = check(limits[name])
        if failed:
            errors.append(FieldError(f"{prefix}{name}", failed, reason, code))
    frame, buffer = limits["max_frame_size"], limits["max_buffer_size"]
    if _is_int(frame) and _is_int(buffer) and frame >= 1024 and 0 < buffer < frame:
        errors.append(
            FieldError(
                f"{prefix}max_buffer_size",
                f"GTE:{prefix}max_frame_size",
                "MUST be at least max_frame_size",
                "BUFFER_SMALLER_THAN_FRAME",
            )
        )


def _check_capabilities(caps: Any, path: str, errors: list[FieldError]) -> None:
    if not isinstance(caps, list):
        errors.append(
            FieldError(path, "ARRAY", "MUST be a JSON array", "INVALID_CAPABILITIES_FORMAT")
        )
        return
    seen: set[str] = set()
    for index, item in enumerate(caps):
        where = f"{path}[{index}]"
        if not isinstance(item, str) or not CAPABILITY.fullmatch(item):
            errors.append(
                FieldError(
                    where,
                    "PATTERN:^[A-Za-z0-9_.-]{1,128}$",
                    "MUST be 1-128 characters of a-z, A-Z, 0-9, '_', '.', '-'",
                    "INVALID_CAPABILITY_IDENTIFIER",
                )
            )
        elif item in seen:
            errors.append(
                FieldError(
                    where, "UNIQUE", f"duplicates {item!r} listed earlier", "DUPLICATE_CAPABILITY"
                )
            )
        else:
            seen.add(item)


def _require_object(body: dict[str, Any], name: str) -> dict[str, Any] | None:
    value = body.get(name)
    if name in body and not isinstance(value, dict):
        raise BadRequest(f"{name}: must be a JSON object", "INVALID_REQUEST")
    return value


def validate_limits(body: dict[str, Any], now: datetime) -> tuple[Envelope, dict[str, Any]]:
    """`PUT /v1/nodes/config/limits` (§4.1.5): the envelope and the five limits, or an error."""
    _check_reason(body)
    limits = _require_object(body, "limits")
    missing = [f for f in ("config_version", "effective_at") if f not in body]
    missing += [f"limits.{f}" for f in LIMIT_FIELDS if limits is None or f not in limits]
    if error := _missing(missing):
        raise error
    errors: list[FieldError] = []
    _check_envelope(body, now, errors)
    _check_limits(limits, "limits.", errors)
    if errors:
        raise _unprocessable(errors)
    snapshot = {f: limits[f] for f in LIMIT_FIELDS}
    return _envelope(body), snapshot


def validate_capabilities(body: dict[str, Any], now: datetime) -> tuple[Envelope, list[str]]:
    """`PUT /v1/nodes/config/capabilities` (§4.1.6). Unknown identifiers are kept (M-CFG-17)."""
    _check_reason(body)
    missing = [f for f in ("config_version", "effective_at", "capabilities") if f not in body]
    if error := _missing(missing):
        raise error
    errors: list[FieldError] = []
    _check_envelope(body, now, errors)
    _check_capabilities(body["capabilities"], "capabilities", errors)
    if errors:
        raise _unprocessable(errors)
    return _envelope(body), list(body["capabilities"])


def validate_legacy(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Deprecated `POST /v1/nodes/config` (§4.1.9): flat limits plus optional capabilities."""
    if error := _missing([f for f in LIMIT_FIELDS if f not in body]):
        raise error
    errors: list[FieldError] = []
    _check_limits(body, "", errors)
    caps = body.get("capabilities", [])
    _check_capabilities(caps, "capabilities", errors)
    if errors:
        raise _unprocessable(errors)
    return {f: body[f] for f in LIMIT_FIELDS}, list(caps)


def _envelope(body: dict[str, Any]) -> Envelope:
    return Envelope(body["config_version"], parse_iso(body["effective_at"]), body.get("reason"))
