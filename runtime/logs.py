"""Log lines: plain text (the default) or one JSON object per line, never with a secret.

Rules:

1. `--log-format json` (or `RAWP_LOG_FORMAT=json`) makes every line one JSON object with
   `ts`, `level`, `logger`, `message`, and — where one applies — `request_id` and `session_id`
   (plus `exc` for a traceback). Those two ids live in context variables that the tiers set at
   their entry points (an HTTP request, a WebSocket, a session's own tasks) with `bound()`;
   asyncio tasks copy them when they are created, so a task started for a session logs its id.
2. Nothing secret reaches a line, in either format, through this module's formatter: `scrub`
   replaces the values of `…ticket`, `…token`, `…secret` and `password` query or key=value
   parameters, bearer credentials, and every value registered with `hide()` by `…` (`rawp`
   registers every environment variable named like a credential: `hide_environment`).
3. Pure: standard library only (architecture: `runtime` imports no server library).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson

FORMATS = ("text", "json")
REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
SESSION_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("session_id", default=None)

_HIDDEN: set[str] = set()
# `ticket=…`, `token: …`, `"secret": "…"`: the name, its separator, then the value up to a
# delimiter (a pairing URL carries its token as `?token=`).
_NAMED = re.compile(
    r"""(?P<name>\b(?:[a-z_]*ticket|[a-z_]*token|[a-z_]*secret|password)\b["']?\s*[=:]\s*["']?)"""
    r"""(?P<value>[^\s&"',;)}\]]+)""",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?P<name>\b(?:Bearer|Bot)\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})")
MASK = "…"


def hide(*values: str | None) -> None:
    """Rule 2: never print these values (secrets shorter than 6 characters are not values
    worth hiding, and hiding them would mangle ordinary words)."""
    _HIDDEN.update(v for v in values if v and len(v) >= 6)


SECRET_NAMES = ("SECRET", "TOKEN", "PASSWORD", "API_KEY")


def hide_environment(env: Mapping[str, str]) -> None:
    """Rule 2 for the whole process: the values of every variable named like a credential
    (`RAWP_EDGE_SECRET`, `DISCORD_BOT_TOKEN`, `SLACK_SIGNING_SECRET`, `*_API_KEY`…)."""
    hide(*(value for name, value in env.items() if any(s in name.upper() for s in SECRET_NAMES)))


def scrub(text: str) -> str:
    """`text` without the secrets of rule 2."""
    for value in sorted(_HIDDEN, key=len, reverse=True):
        if value in text:
            text = text.replace(value, MASK)
    text = _NAMED.sub(lambda m: m["name"] + MASK, text)
    return _BEARER.sub(lambda m: m["name"] + MASK, text)


@contextlib.contextmanager
def bound(*, request_id: str | None = None, session_id: str | None = None) -> Iterator[None]:
    """Rule 1: lines logged inside carry these ids (an id left None keeps the outer one)."""
    tokens = []
    if request_id is not None:
        tokens.append((REQUEST_ID, REQUEST_ID.set(request_id)))
    if session_id is not None:
        tokens.append((SESSION_ID, SESSION_ID.set(session_id)))
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def bind_session(session_id: str) -> None:
    """Rule 1 for a task that belongs to one session for its whole life (no reset needed:
    the task's context ends with it)."""
    SESSION_ID.set(session_id)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": scrub(record.getMessage()),
        }
        for key, var in (("request_id", REQUEST_ID), ("session_id", SESSION_ID)):
            value = var.get()
            if value is not None:
                line[key] = value
        if record.exc_info:
            line["exc"] = scrub(self.formatException(record.exc_info))
        return orjson.dumps(line).decode()


def _scrubbing_factory(make: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        # A malformed call is logging's to report when the line is written, as without this.
        with contextlib.suppress(Exception):
            record.msg, record.args = scrub(record.getMessage()), None
        return record

    factory.scrubs = True  # type: ignore[attr-defined]
    return factory


def configure(fmt: str, level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """Rule 2 for every line of the process whatever its handler (records are scrubbed as
    they are made), and rule 1: JSON lines on stderr. Text is left to each command's own
    `logging.basicConfig`, which does nothing once a handler is installed here."""
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    current = logging.getLogRecordFactory()
    if not getattr(current, "scrubs", False):
        logging.setLogRecordFactory(_scrubbing_factory(current))
    if fmt != "json":
        return
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
