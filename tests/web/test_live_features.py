"""Issue 30 on the web edge, end to end in Chromium against a real `rawp up` (master, client and
gateway with its web edge as child processes; docs/web.md, "Worktrees, resume and fork, voice,
schedules"). The agent is `keeper`, the fake ACP agent offering `session/load`
(tests/agents/fake_acp.py): after a resume its answers start with `[loaded: …]`.

- Voice, resume, fork: Chromium's fake microphone records a clip that the web edge sends to
  the fake transcription service (tests/fakes/transcription_server.py); the transcript is shown
  and is the prompt the agent answers. The session is ended elsewhere (the master, as the
  owner); the page offers Resume, the resumed session opens with the earlier transcript above
  it and the agent goes on with its own conversation. Fork is refused by this agent kind, in
  words. The session list shows the ended one with Resume.
- Worktree and schedules: a session started in its own git worktree shows Diff, Merge and
  Discard; the diff holds a file written in the worktree; a merge that conflicts is refused in
  words and the worktree stays; Discard removes it. A schedule made for the session's node and
  agent is listed, paused, resumed and deleted.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import aiohttp
import orjson
from playwright.async_api import async_playwright

from tests.fakes.transcription_server import FakeTranscription
from tests.up.test_up_web import LINK, start_up
from tests.web.conftest import ARTIFACTS

FAKE_ACP = Path(__file__).parents[1] / "agents" / "fake_acp.py"
TURN = {
    "updates": [
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "noted"}}
    ],
    "response": {"stopReason": "end_turn"},
}
FAKE_MEDIA = ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"]


def keeper_agents(tmp_path: Path) -> Path:
    transcript = tmp_path / "keeper.json"
    transcript.write_text(json.dumps({"load_session": True, "turns": [TURN] * 4}))
    command = json.dumps([sys.executable, str(FAKE_ACP), str(transcript)])
    file = tmp_path / "agents.toml"
    file.write_text(f'[agents.keeper]\nkind = "acp"\ncommand = {command}\n')
    return file


async def up_with_keeper(processes, tmp_path: Path, workspace: Path, *extra: str) -> str:
    """`rawp up` with the keeper agent; its printed sign-in link."""
    agents = keeper_agents(tmp_path)
    flags = ("--agent", "keeper", "--agents-file", str(agents), "--workspace", str(workspace))
    _up, lines = start_up(processes, tmp_path, *flags, *extra)
    return (await asyncio.to_thread(lines._wait, LINK, 90)).group(1)


async def signed_in_page(playwright, chromium_path: str, link: str):
    browser = await playwright.chromium.launch(
        executable_path=chromium_path, headless=True, args=FAKE_MEDIA
    )
    page = await browser.new_page(viewport={"width": 1200, "height": 800})
    page.set_default_timeout(30_000)  # a real agent on a busy machine
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.on("dialog", lambda dialog: dialog.accept())  # Merge, Discard, Delete ask first
    await page.goto(link)
    await page.wait_for_selector("#new-session select[name=agent_name] option", state="attached")
    return browser, page


NEW_SESSION = """(old) => { const s = document.querySelector('#session');
  return !s.hidden && s.dataset.sessionId && s.dataset.sessionId !== old
    && document.querySelector('#conn-state').dataset.state === 'open'; }"""


async def start_session(page, workspace: str | None = None, worktree: bool = False) -> str:
    before = await page.get_attribute("#session", "data-session-id")
    await page.select_option("#new-session select[name=agent_name]", "keeper")
    if workspace:
        await page.fill("#new-session input[name=workspace_path]", workspace)
    if worktree:
        await page.check("#new-session input[name=worktree]")
    await page.click("#new-session button[type=submit]")
    await page.wait_for_function(NEW_SESSION, arg=before)
    return await page.get_attribute("#session", "data-session-id")


async def end_as_owner(tmp_path: Path, session_id: str) -> None:
    """The session ended elsewhere (as the chat or the console would): DELETE on the master as
    its owner, with this run's edge secret."""
    run = orjson.loads((tmp_path / "state" / "up.json").read_bytes())
    master = f"http://127.0.0.1:{run['master_port']}"
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{master}/v1/edge/auth/token",
            json={"subject": "console:local"},
            headers={"Authorization": f"Bearer {run['edge_secret']}"},
        ) as answer:
            token = (await answer.json())["access_token"]
        async with http.delete(
            f"{master}/v1/edge/sessions/{session_id}",
            headers={"Authorization": f"Bearer {token}"},
        ) as answer:
            assert answer.status == 204, await answer.text()


async def test_voice_then_resume_keeps_the_conversation_and_fork_is_refused_in_words(
    processes, tmp_path, chromium_path
):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with FakeTranscription(text="hello from my voice") as whisper, async_playwright() as pw:
        link = await up_with_keeper(
            processes, tmp_path, workspace, "--transcribe-url", whisper.base_url
        )
        browser, page = await signed_in_page(pw, chromium_path, link)
        try:
            first = await start_session(page)
            voice = page.locator("#voice")
            await voice.wait_for()  # a transcription service is configured
            await voice.click()
            await page.wait_for_selector("#voice[data-state=recording]")
            await voice.click()  # stop: the clip goes to the web edge
            said = page.locator("#transcript .bubble.user.voice", has_text="hello from my voice")
            await said.wait_for()
            await page.locator("#transcript .bubble.agent", has_text="noted").wait_for()
            [heard] = whisper.requests
            assert heard.content_type in ("audio/webm", "audio/ogg"), heard.content_type
            assert len(heard.data) > 0 and heard.filename.startswith("voice.")

            await end_as_owner(tmp_path, first)
            resume = page.locator("#resume")
            await resume.wait_for()  # offered once the session ended
            await page.locator(
                f".session-item.ended[data-session-id='{first}'] button.resume"
            ).wait_for()  # the list shows it ended, with Resume
            await resume.click()
            await page.wait_for_function(NEW_SESSION, arg=first)
            second = await page.get_attribute("#session", "data-session-id")
            # The earlier transcript stays above the resumed session.
            await page.locator(
                f"#transcript .earlier[data-session-id='{first}'] .bubble.user",
                has_text="hello from my voice",
            ).wait_for()
            await page.fill("#composer", "what did I say?")
            await page.click("#send")
            await page.locator("#transcript .bubble.agent", has_text="[loaded:").wait_for()
            assert second != first

            await page.click("#fork")  # the ACP kind cannot fork: the machine says so
            await page.locator("#transcript .notice.error", has_text="FORK_UNSUPPORTED").wait_for()
            assert await page.get_attribute("#session", "data-session-id") == second
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(path=str(ARTIFACTS / "test_live_features_resume.png"))
            raise
        finally:
            await browser.close()
    assert not page.errors, f"errors in the page: {page.errors}"


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


async def test_worktree_diff_conflict_discard_and_schedules(processes, tmp_path, chromium_path):
    workspace = tmp_path / "ws"
    repo = workspace / "app"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("app\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "start")
    async with async_playwright() as pw:
        link = await up_with_keeper(processes, tmp_path, workspace)
        browser, page = await signed_in_page(pw, chromium_path, link)
        try:
            await schedules_of_a_session(page)
            sid = await start_session(page, str(repo), worktree=True)
            await page.locator("#worktree").wait_for()  # the session has a worktree
            assert await page.locator("#voice").is_hidden()  # no transcription service
            tree = repo.parent / "app.worktrees" / sid.replace("-", "")[:8]
            (tree / "note.txt").write_text("from the worktree\n")
            await page.click("#wt-diff")
            diff = page.locator("#worktree-diff", has_text="+from the worktree")
            await diff.wait_for()
            assert "note.txt" in await diff.inner_text()

            (repo / "note.txt").write_text("from main\n")  # the same file, otherwise
            git(repo, "add", "note.txt")
            git(repo, "commit", "-q", "-m", "main too")
            await page.click("#wt-merge")
            result = page.locator("#worktree-result[data-outcome=error]", has_text="MERGE_CONFLICT")
            await result.wait_for()
            assert "does not merge cleanly" in await result.inner_text()
            assert tree.is_dir()  # nothing merged, the worktree stays

            await page.click("#wt-discard")
            await page.locator("#worktree-result", has_text="Discarded").wait_for()
            await page.wait_for_selector("#worktree", state="hidden")
            assert not tree.exists()
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(path=str(ARTIFACTS / "test_live_features_worktree.png"))
            raise
        finally:
            await browser.close()
    assert not page.errors, f"errors in the page: {page.errors}"


async def schedules_of_a_session(page) -> None:
    """A schedule for the open session's node and agent: made, paused, resumed, deleted."""
    await start_session(page)
    # Started without a worktree: the master says so, and there are no worktree buttons.
    await page.wait_for_selector("#worktree[data-worktree=NO_WORKTREE]", state="attached")
    assert await page.locator("#worktree").is_hidden()
    form = page.locator("#new-schedule")
    await form.locator("input[name=schedule]").fill("every day 18:30")
    await form.locator("textarea[name=prompt]").fill("summarise the day")
    await form.locator("button[type=submit]").click()
    item = page.locator(".schedule-item", has_text="summarise the day")
    await item.locator(".schedule-when", has_text="30 18 * * *").wait_for()
    assert "keeper" in await item.inner_text()
    await item.locator("button.pause").click()
    await page.locator(".schedule-item.paused", has_text="summarise the day").wait_for()
    await item.locator("button.resume").click()
    await item.locator("button.pause").wait_for()
    await item.locator("button.delete").click()
    await item.wait_for(state="detached")
