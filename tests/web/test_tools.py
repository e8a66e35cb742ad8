"""Tool cards with live output, diffs (G-DIFF-08), task lists, approvals as buttons (U-02)."""

from tests.web.spa_server import dps

T = "turn-1"
DIFF = (
    "--- a/src/auth.ts\n+++ b/src/auth.ts\n@@ -10,3 +10,3 @@\n"
    " const a = 1;\n-return true\n+return ok\n const b = 2;\n"
)


def test_tool_card_streams_then_shows_a_diff_with_two_number_columns(session_page, spa_server):
    page = session_page
    spa_server.send(
        dps(
            "tool.invoke.request",
            {
                "invocation_id": "c7",
                "tool_name": "Bash",
                "input": {"command": "npm test"},
                "title": "npm test",
            },
            T,
        ),
        dps(
            "tool.invoke.stream",
            {"invocation_id": "c7", "stream": "stdout", "text": "PASS one\n", "mode": "append"},
            T,
        ),
    )
    card = page.locator(".tool-card[data-invocation-id='c7']")
    card.wait_for()
    page.wait_for_function(
        "() => document.querySelector('.tool-card .tool-output').textContent === 'PASS one\\n'"
    )
    spa_server.send(
        dps(
            "tool.invoke.stream",
            {"invocation_id": "c7", "stream": "stdout", "text": "PASS two\n", "mode": "append"},
            T,
        )
    )
    page.wait_for_function(
        "() => document.querySelector('.tool-card .tool-output').textContent.includes('two')"
    )
    assert card.locator(".tool-output").text_content() == "PASS one\nPASS two\n"
    # The card folds and unfolds its output.
    card.locator(".tool-head").click()
    assert card.locator(".tool-body").is_hidden()
    card.locator(".tool-head").click()
    assert card.locator(".tool-body").is_visible()

    spa_server.send(
        dps(
            "tool.invoke.result",
            {
                "invocation_id": "c8",
                "tool_name": "Edit",
                "status": "success",
                "output_type": "diff",
                "output": DIFF,
                "duration_ms": 12,
            },
            T,
        )
    )
    rows = page.locator(".tool-card[data-invocation-id='c8'] table.diff tr")
    rows.first.wait_for()
    cells = rows.evaluate_all(
        "rows => rows.filter(r => ['ctx', 'add', 'del'].includes(r.className)).map(r =>"
        " [r.className, ...[...r.cells].map(c => c.textContent)])"
    )
    # G-DIFF-08: context both numbers, deleted only the old, added only the new.
    assert cells == [
        ["ctx", "10", "10", " const a = 1;"],
        ["del", "11", "", "-return true"],
        ["add", "", "11", "+return ok"],
        ["ctx", "12", "12", " const b = 2;"],
    ]
    number_colour, code_colour = page.evaluate("""() => {
      const row = document.querySelector('table.diff tr.ctx');
      return [getComputedStyle(row.cells[0]).color, getComputedStyle(row.cells[2]).color];
    }""")
    assert number_colour != code_colour  # set apart: light numbers


def test_task_list_and_plan(session_page, spa_server):
    page = session_page
    spa_server.send(
        dps(
            "tool.invoke.result",
            {
                "invocation_id": "c9",
                "tool_name": "TodoWrite",
                "status": "success",
                "output_type": "structured",
                "output": {
                    "tasks": [
                        {"id": "1", "content": "Read the parser", "status": "completed"},
                        {"id": "2", "content": "Fix the lexer", "status": "in_progress"},
                    ]
                },
            },
            T,
        )
    )
    page.wait_for_selector(".tool-card .tasks")
    assert page.locator(".tool-card .tasks li").evaluate_all(
        "items => items.map(i => [i.dataset.status, i.textContent.slice(1).trim()])"
    ) == [["completed", "Read the parser"], ["in_progress", "Fix the lexer"]]
    spa_server.send(
        dps("agent.plan.updated", {"entries": [{"content": "Step A", "status": "pending"}]}, T)
    )
    spa_server.send(
        dps(
            "agent.plan.updated",
            {
                "entries": [
                    {"content": "Step A", "status": "completed"},
                    {"content": "Step B", "status": "pending"},
                ]
            },
            T,
        )
    )
    page.wait_for_function(
        "() => document.querySelectorAll(':scope #transcript-content > .tasks li').length === 2"
    )
    assert page.locator("#transcript-content > .tasks").count() == 1  # a full replacement


def test_approval_buttons_send_the_chosen_option(session_page, spa_server):
    page = session_page
    request = dps(
        "agent.interaction.request",
        {
            "interaction_id": "perm-1",
            "kind": "approval",
            "prompt": "Run `npm test`?",
            "options": [
                {"option_id": "allow", "label": "Allow once", "kind": "allow_once"},
                {"option_id": "deny", "label": "Deny", "kind": "reject_once"},
            ],
            "invocation_id": "c7",
        },
        T,
    )
    spa_server.send(
        dps("agent.text.delta", {"content_index": 0, "text": "Plain text."}, T), request
    )
    button = page.locator(".approval button[data-option-id='deny']")
    button.wait_for()
    # U-02: the buttons animate (a transition); U-01: the plain text area does not.
    assert button.evaluate("e => parseFloat(getComputedStyle(e).transitionDuration)") > 0
    assert (
        page.locator(".bubble.agent").evaluate("e => getComputedStyle(e).transitionDuration")
        == "0s"
    )
    button.click()
    answer = spa_server.wait_frame("control.interaction.response")
    assert answer["payload"] == {"interaction_id": "perm-1", "option_id": "deny"}
    assert answer["parent_id"] == request["message_id"]
    assert page.locator(".approval button[data-option-id='allow']").is_disabled()
    assert "Deny" in page.locator(".approval-answer").inner_text()


def test_approval_answered_elsewhere_closes_and_turn_end_closes_the_rest(session_page, spa_server):
    page = session_page
    ask = {
        "kind": "approval",
        "prompt": "Edit?",
        "options": [{"option_id": "allow", "label": "Allow once", "kind": "allow_once"}],
    }
    spa_server.send(
        dps("agent.interaction.request", {**ask, "interaction_id": "p1", "invocation_id": "c1"}, T),
        dps("agent.interaction.request", {**ask, "interaction_id": "p2", "invocation_id": "c2"}, T),
    )
    page.wait_for_selector(".approval[data-interaction-id='p2']")
    # Answered in Slack: the agent runs the tool; this page's prompt closes.
    spa_server.send(
        dps(
            "tool.invoke.result",
            {
                "invocation_id": "c1",
                "tool_name": "Edit",
                "status": "success",
                "output_type": "empty",
            },
            T,
        )
    )
    first = page.locator(".approval[data-interaction-id='p1'] button[data-option-id='allow']")
    page.wait_for_function(
        "() => document.querySelector(\"[data-interaction-id='p1'] button\").disabled"
    )
    assert first.is_disabled()
    assert page.locator(".approval[data-interaction-id='p2'] button").is_enabled()
    spa_server.send(dps("session.turn.end", {"turn_id": T, "stop_reason": "end_turn"}, T))
    page.wait_for_function(
        "() => document.querySelector(\"[data-interaction-id='p2'] button\").disabled"
    )
    assert "turn ended" in page.locator(".approval[data-interaction-id='p2']").inner_text()
    assert "control.interaction.response" not in spa_server.sent_types()


PNG_1PX = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5E"
    "rkJggg=="
)


def test_agent_file_chunks_become_a_download_and_an_image(session_page, spa_server):
    page = session_page
    half = len(PNG_1PX) // 4 * 2  # split on a base64 quantum boundary
    base = {"file_id": "f1", "name": "dot.png", "mime_type": "image/png", "size_bytes": 70}
    spa_server.send(
        dps("agent.file", {**base, "data": PNG_1PX[:half], "chunk_index": 0, "final": False}, T),
        dps("agent.file", {**base, "data": PNG_1PX[half:], "chunk_index": 1, "final": True}, T),
    )
    link = page.locator(".file-card a[download='dot.png']")
    link.wait_for()
    page.wait_for_function("() => document.querySelector('.file-card img').naturalWidth === 1")


def test_a_tool_card_header_names_the_tool_once(session_page, spa_server):
    """Agents title a call `Edit src/app.py`: the header reads `Edit  src/app.py`, not the name
    twice; a title that is only the name leaves the title empty; `Editor …` is not `Edit`."""
    calls = {
        "e1": ("Edit", "Edit src/app.py", "src/app.py"),
        "e2": ("Bash", "bash: npm test", "npm test"),
        "e3": ("Read", "Read", ""),
        "e4": ("Edit", "Editor settings", "Editor settings"),
    }
    for invocation, (tool, title, _) in calls.items():
        spa_server.send(
            dps(
                "tool.invoke.request",
                {"invocation_id": invocation, "tool_name": tool, "input": {}, "title": title},
                T,
            )
        )
    page = session_page
    page.locator(".tool-card[data-invocation-id='e4']").wait_for()
    for invocation, (tool, _, shown) in calls.items():
        card = page.locator(f".tool-card[data-invocation-id='{invocation}']")
        assert card.locator(".tool-name").text_content() == tool
        assert card.locator(".tool-title").text_content() == shown, invocation
