"""Issue 30's parts of the session page in Chromium, against the SPA stand-in server
(tests/web/spa_server.py), for what the live test (test_live_features.py) cannot reach with its
agent: a fork that opens, a resume from the list, the worktree refusals and a cancelled
confirmation, voice without a service or with one that fails, Chromium's fake microphone."""

from __future__ import annotations

import pytest
from playwright.sync_api import sync_playwright

from tests.web.page_log import open_page
from tests.web.spa_server import NEW_SESSION_ID, NODE_ID, SESSION_ID, dps

FAKE_MEDIA = ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"]
DIFF = {"branch": "rawp/3f1c2a9e", "base_branch": "main", "diff": "+added\n", "truncated": False}


@pytest.fixture(scope="module")
def browser(chromium_path):
    """conftest's browser, with Chromium's fake microphone (no prompt, a generated tone)."""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, headless=True, args=FAKE_MEDIA)
        yield browser
        browser.close()


def open_session(page, spa_server) -> None:
    open_page(
        page,
        f"{spa_server.url}/#/session/{SESSION_ID}",
        f"#session[data-session-id='{SESSION_ID}']",
    )
    spa_server.wait_connects(1, timeout=30)  # a loaded machine opens pages slowly


def test_no_worktree_no_buttons(page, spa_server):
    open_session(page, spa_server)
    page.wait_for_selector("#worktree[data-worktree=NO_WORKTREE]", state="attached")
    assert page.locator("#worktree").is_hidden()


def test_worktree_diff_a_refused_merge_in_words_and_a_discard(page, spa_server):
    spa_server.worktree = DIFF
    conflict = {"error_code": "MERGE_CONFLICT", "message": "rawp/3f1c2a9e does not merge"}
    spa_server.worktree_answers = {
        "merge": (409, conflict),
        "discard": (200, {"discarded": True, "branch": "rawp/3f1c2a9e"}),
    }
    open_session(page, spa_server)
    page.locator("#worktree").wait_for()
    page.click("#wt-diff")
    page.locator("#worktree-diff", has_text="+added").wait_for()
    assert "rawp/3f1c2a9e against main" in page.inner_text("#worktree-result")

    page.once("dialog", lambda dialog: dialog.dismiss())  # asked, and said no: nothing sent
    page.click("#wt-merge")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#wt-merge")
    result = page.locator("#worktree-result[data-outcome=error]", has_text="MERGE_CONFLICT")
    result.wait_for()
    assert "nothing was merged and the worktree stays" in result.inner_text()
    assert page.locator("#worktree").is_visible()
    assert spa_server.worktree_posts == ["merge"]

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#wt-discard")
    page.locator("#worktree-result", has_text="Discarded the worktree and branch").wait_for()
    page.wait_for_selector("#worktree", state="hidden")
    assert spa_server.worktree_posts == ["merge", "discard"]


def test_a_worktree_gone_elsewhere_is_said_in_words(page, spa_server):
    spa_server.worktree = DIFF
    open_session(page, spa_server)
    page.locator("#worktree").wait_for()
    spa_server.worktree = None  # merged or discarded from chat meanwhile
    page.click("#wt-diff")
    said = page.locator("#worktree-result[data-outcome=error]", has_text="NO_WORKTREE")
    said.wait_for()
    assert "This session has no worktree (any more)" in said.inner_text()


def test_fork_opens_the_copy_with_the_transcript_above(page, spa_server):
    open_session(page, spa_server)
    spa_server.send(dps("agent.text.delta", {"content_index": 0, "text": "the original"}, "t1"))
    page.locator(".bubble.agent", has_text="the original").wait_for()
    page.click("#fork")
    page.wait_for_selector(f"#session[data-session-id='{NEW_SESSION_ID}']")
    assert spa_server.created[-1] == {
        "node_id": NODE_ID,
        "agent_name": "demo",
        "resume": SESSION_ID,
        "fork": True,
    }
    earlier = page.locator(f"#transcript .earlier[data-session-id='{SESSION_ID}']")
    assert "the original" in earlier.inner_text()
    assert "Forked from session 3f1c2a9e" in page.inner_text("#transcript .notice.lineage")
    page.locator(f".session-item[data-session-id='{NEW_SESSION_ID}']").wait_for()


def test_an_ended_session_offers_resume_in_the_header_and_the_list(page, spa_server):
    open_session(page, spa_server)
    assert page.locator("#resume").is_hidden()  # live: fork only
    assert page.locator("#fork").is_visible()
    spa_server.drop(1000)  # the master ended the session
    page.wait_for_selector("#conn-state[data-state=ended]")
    page.locator("#resume").wait_for()
    listed = page.locator(f".session-item.ended[data-session-id='{SESSION_ID}']")
    listed.locator("button.resume").click()
    page.wait_for_selector(f"#session[data-session-id='{NEW_SESSION_ID}']")
    resumed = {"node_id": NODE_ID, "agent_name": "demo", "resume": SESSION_ID}
    assert spa_server.created[-1] == resumed
    assert "Resumed session 3f1c2a9e" in page.inner_text("#transcript .notice.lineage")


def test_without_a_transcription_service_there_is_no_microphone(page, spa_server):
    open_session(page, spa_server)
    page.wait_for_function("async () => !(await (await fetch('/api/voice')).json()).configured")
    assert page.locator("#voice").is_hidden()


def test_a_failed_transcription_is_said_and_nothing_is_sent(page, spa_server):
    spa_server.voice = "!the transcription service answered HTTP 500. Nothing was sent"
    open_session(page, spa_server)
    page.locator("#voice").wait_for()
    page.click("#voice")
    page.wait_for_selector("#voice[data-state=recording]")
    page.click("#voice")
    page.locator(".notice.error", has_text="answered HTTP 500").wait_for()
    page.wait_for_selector("#voice[data-state=idle]")
    [(kind, size)] = spa_server.clips
    assert kind in ("audio/webm", "audio/ogg") and size > 0
    assert "control.prompt.request" not in spa_server.sent_types()


def test_a_transcript_is_sent_as_the_prompt(page, spa_server):
    spa_server.voice = "run the tests"
    open_session(page, spa_server)
    page.locator("#voice").wait_for()
    page.click("#voice")
    page.wait_for_selector("#voice[data-state=recording]")
    page.click("#voice")
    sent = spa_server.wait_frame("control.prompt.request", timeout=30)
    assert sent["payload"]["prompt_text"] == "run the tests"
    page.locator(".bubble.user.voice", has_text="run the tests").wait_for()
