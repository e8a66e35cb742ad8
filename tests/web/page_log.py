"""What a browser test's page waited for, told when it does not open (tests/web/conftest.py
attaches a `PageLog` to every page)."""

from __future__ import annotations

import time

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

OPEN_MS = 120_000  # a page's first load (open_page); each step after it has Playwright's 30 s
# Chromium fails the loads in flight when the host's network interfaces change; the Docker
# tests' engine and containers change them while browser tests run beside them.
NETWORK_CHANGED = "net::ERR_NETWORK_CHANGED"
RELOADS = 3  # page loads interrupted that way, at most, before the page counts as broken
POLL_MS = 500  # how often open_page looks at the failed requests while it waits


class PageLog:
    """What a page asked for and has not had, what failed, and what its console said: told
    when a page does not open (twice, under load, the session page stayed blank past its
    deadline, its scripts' requests unaccounted for)."""

    def __init__(self, page) -> None:
        self.began = time.monotonic()
        self.pending: dict[object, tuple[float, str]] = {}
        self.failed: list[str] = []
        self.console: list[str] = []
        page.on("request", self._asked)
        page.on("requestfinished", lambda r: self.pending.pop(r, None))
        page.on("requestfailed", self._failed)
        page.on("console", lambda message: self.console.append(f"{message.type}: {message.text}"))

    def _asked(self, request) -> None:
        self.pending[request] = (time.monotonic() - self.began, request.url)

    def _failed(self, request) -> None:
        self.pending.pop(request, None)
        self.failed.append(f"{request.url}: {request.failure}")

    def network_changed_since(self, seen: int) -> bool:
        """Whether a request failed with NETWORK_CHANGED after the first `seen` failures."""
        return any(NETWORK_CHANGED in failure for failure in self.failed[seen:])

    def __str__(self) -> str:
        waiting = [f"  {url} (asked at {at:.1f} s)" for at, url in self.pending.values()]
        return "\n".join([
            f"after {time.monotonic() - self.began:.1f} s the page still waited for "
            f"{len(waiting)} request(s):", *waiting,
            f"failed requests: {self.failed or 'none'}",
            f"console: {self.console[-20:] or 'nothing'}",
        ])  # fmt: skip


PAGE_LOGS: dict[int, PageLog] = {}


def open_page(page, url: str, selector: str, timeout_ms: float = OPEN_MS) -> None:
    """Go to `url` and wait until `selector` shows, with more time than each step after it:
    the first page a worker opens starts Chromium cold, and on a new machine two busy loops,
    apt and the Docker tests' image build run beside it (a loaded run took over 30 s). Past
    the deadline the failure says what the page was still waiting for.

    A load that Chromium itself gave up because the host's network changed (NETWORK_CHANGED:
    the page's scripts failed with it and the page stayed blank until the deadline, three times
    in loaded runs beside the Docker tests) is loaded again, as a user would reload it, at most
    RELOADS times and said on stdout: the page and the server are not what failed there. Any
    other failure still fails at the deadline with the page log."""
    log = PAGE_LOGS.get(id(page))
    deadline = time.monotonic() + timeout_ms / 1000
    reloads, seen = 0, len(log.failed) if log else 0

    def load_again(load) -> None:
        nonlocal reloads, seen
        reloads, seen = reloads + 1, len(log.failed) if log else 0
        print(f"open_page: {url} interrupted by a network change; loading it again")
        load()

    try:
        try:
            page.goto(url, timeout=timeout_ms)
        except PlaywrightError as exc:
            if NETWORK_CHANGED not in exc.message:
                raise
            load_again(lambda: page.goto(url, timeout=timeout_ms))
        while True:
            left_ms = (deadline - time.monotonic()) * 1000
            try:
                page.wait_for_selector(selector, timeout=max(1.0, min(POLL_MS, left_ms)))
                return
            except PlaywrightTimeoutError:
                if left_ms <= POLL_MS:
                    raise
            if log is not None and log.network_changed_since(seen) and reloads < RELOADS:
                load_again(lambda left=left_ms: page.reload(timeout=max(1.0, left)))
    except PlaywrightTimeoutError as exc:
        raise AssertionError(f"{exc.message}\n{log or 'no page log'}") from None
