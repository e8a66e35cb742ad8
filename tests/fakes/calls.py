"""The ordered call log and the 429 plan shared by the fake Discord and fake Slack servers.

Every request a fake receives is appended to a `CallLog` before it is answered, so a test can
assert on what the real client library actually sent, in order. `RateLimitPlan` lets a test say
"answer the next N calls to this route with 429" so the client's own retry handling is exercised.

The wait helpers take a `timeout` argument (ruff's ASYNC109 is silenced where they are defined):
a bounded deadline that names what was seen instead is the whole point of them.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

# How often wait_for_call looks at the log again. Small enough that tests stay fast, large enough
# not to spin a core on a 2-core machine shared with other engineers.
POLL_INTERVAL = 0.01


@dataclass(frozen=True)
class Call:
    """One request seen by a fake server (or one frame seen by a fake websocket)."""

    # "GET", "POST", ...; "WS" for a websocket frame received from the client.
    method: str
    # The route without the API prefix ("/channels/1/messages"), a Slack method name
    # ("chat.postMessage"), or for "WS" the frame kind ("IDENTIFY", "ack", "CONNECT").
    path: str
    body: Any  # parsed JSON, a form dict, or None
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 200  # what the fake answered
    files: tuple[str, ...] = ()  # file names of a multipart upload, if any
    response: Any = None  # the JSON the fake answered (None for an empty answer)
    at: float = field(default_factory=time.monotonic)

    def matches(self, method: str, path: str) -> bool:
        """`path` may be exact or a glob: `*` within one path segment, `**` across segments.
        `method` "*" matches any HTTP verb (not websocket frames)."""
        if method == "*":
            return self.method != "WS" and path_matches(path, self.path)
        return self.method == method.upper() and path_matches(path, self.path)


@lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(\*\*|\*)", pattern)
    wildcard = {"**": ".*", "*": "[^/]*"}
    return re.compile("".join(wildcard.get(p, re.escape(p)) for p in parts))


def path_matches(pattern: str, path: str) -> bool:
    """`/channels/*/messages` matches `/channels/1/messages` but not `.../messages/2`."""
    return _glob(pattern).fullmatch(path) is not None


class CallLog:
    """Append-only, ordered record of calls with a bounded wait."""

    def __init__(self) -> None:
        self._calls: list[Call] = []

    def record(self, call: Call) -> Call:
        self._calls.append(call)
        return call

    def __len__(self) -> int:
        return len(self._calls)

    def __iter__(self):
        return iter(list(self._calls))

    @property
    def calls(self) -> list[Call]:
        return list(self._calls)

    def find(
        self, method: str, path: str, *, where: Callable[[Call], bool] | None = None
    ) -> list[Call]:
        """All calls matching method+path (and `where`), in arrival order."""
        return [c for c in self._calls if c.matches(method, path) and (where is None or where(c))]

    def successful(self, method: str, path: str) -> list[Call]:
        """Matching calls that the fake answered with a 2xx (rate-limited attempts excluded)."""
        return self.find(method, path, where=lambda c: 200 <= c.status < 300)

    async def wait_for_call(
        self,
        method: str,
        path: str,
        timeout: float = 5.0,  # noqa: ASYNC109
        *,
        count: int = 1,
        where: Callable[[Call], bool] | None = None,
    ) -> Call:
        """Wait until `count` matching calls were recorded; return the `count`-th one.

        Raises TimeoutError naming what was seen instead, so a failing test explains itself.
        """
        deadline = time.monotonic() + timeout
        while True:
            found = self.find(method, path, where=where)
            if len(found) >= count:
                return found[count - 1]
            if time.monotonic() >= deadline:
                seen = ", ".join(f"{c.method} {c.path} → {c.status}" for c in self._calls[-15:])
                raise TimeoutError(
                    f"no {count}× {method} {path} within {timeout}s; last calls: [{seen}]"
                )
            await asyncio.sleep(POLL_INTERVAL)


@dataclass
class _PlannedLimit:
    method: str
    path: str
    remaining: int
    retry_after: float
    is_global: bool


class RateLimitPlan:
    """Answers chosen routes with 429 a set number of times, then lets them through."""

    def __init__(self) -> None:
        self._plans: list[_PlannedLimit] = []

    def add(
        self,
        method: str,
        path: str,
        *,
        times: int = 1,
        retry_after: float = 0.2,
        is_global: bool = False,
    ) -> None:
        self._plans.append(_PlannedLimit(method.upper(), path, times, retry_after, is_global))

    def take(self, method: str, path: str) -> _PlannedLimit | None:
        """Consume one planned 429 for this request, if any is left."""
        for plan in self._plans:
            same_method = plan.method in ("*", method)
            if plan.remaining > 0 and same_method and path_matches(plan.path, path):
                plan.remaining -= 1
                return plan
        return None

    @property
    def pending(self) -> int:
        return sum(p.remaining for p in self._plans)
