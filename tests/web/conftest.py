"""Fixtures of the browser tests: Debian's Chromium (installed with apt where missing), the SPA
stand-in server (spa_server.py), and a page with the session open. A failing test leaves a
screenshot in tests/web/artifacts/."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.support import apt_install
from tests.web.page_log import PAGE_LOGS, PageLog, open_page
from tests.web.spa_server import SESSION_ID, SpaServer

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


def ensure_chromium() -> str | None:
    """The browser's path, once Debian's package is installed — asked every time, so a
    package another worker is still installing is waited for (tests.support.apt_install);
    None and the reason printed when it cannot be had."""
    why = apt_install("chromium")
    if why is not None or not CHROMIUM.exists():
        print(f"browser tests: {why or 'apt-get installed no /usr/bin/chromium'}")
        return None
    return str(CHROMIUM)


@pytest.fixture(scope="session")
def chromium_path():
    path = ensure_chromium()
    if path is None:
        pytest.skip("no Chromium: /usr/bin/chromium is missing and apt-get could not install it")
    return path


@pytest.fixture(scope="module")
def browser(chromium_path):
    # Per module, not per session: while Playwright's sync API is open it leaves its event loop
    # running in this thread, and a later module's `asyncio.run` (the chat stacks' fixtures,
    # tests/web/test_live_slack.py) would then refuse to start.
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def spa_server():
    server = SpaServer().start()
    yield server
    server.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
def page(browser, spa_server, request):
    spa_server.reset()
    context = browser.new_context(viewport={"width": 1100, "height": 700})
    # Playwright's 30 s: a busy machine (two cores, six workers and two busy loops beside the
    # suite) has been seen to take over 15 s to open a page.
    context.set_default_timeout(30000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    PAGE_LOGS[id(page)] = PageLog(page)
    yield page
    PAGE_LOGS.pop(id(page), None)
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()
    # A script error in the SPA is a failure of the test that caused it.
    assert not errors, f"errors in the page: {errors}"


@pytest.fixture
def session_page(page, spa_server):
    """The SPA with the test session open and its WebSocket connected."""
    open_page(
        page,
        f"{spa_server.url}/#/session/{SESSION_ID}",
        f"#session[data-session-id='{SESSION_ID}']",
    )
    spa_server.wait_connects(1)
    return page
