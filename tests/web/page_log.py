"""What a browser test's page waited for, told when it does not open (tests/web/conftest.py
attaches a `PageLog` to every page)."""

from __future__ import annotations

import time

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

OPEN_MS = 120_000  # a page's first load (open_page); each step after it has Playwright's 30 s


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
    the deadline the failure says what the page was still waiting for."""
    try:
        page.goto(url, timeout=timeout_ms)
        page.wait_for_selector(selector, timeout=timeout_ms)
    except PlaywrightTimeoutError as exc:
        raise AssertionError(f"{exc.message}\n{PAGE_LOGS.get(id(page), 'no page log')}") from None
