"""Markdown views of tools, diffs and task lists (old §8.4)."""

from __future__ import annotations

from gateway.rendering.chunker import fence_after
from gateway.rendering.views import (
    code_block,
    looks_like_diff,
    render_diff,
    render_tasks,
    result_detail,
    result_line,
    running_line,
)
from rawp.events import Task, ToolInvokeRequest, ToolInvokeResult


def request(name="Bash", **inp) -> ToolInvokeRequest:
    return ToolInvokeRequest(invocation_id="c1", tool_name=name, input=inp)


def result(status="success", output_type="text", output=None, **kw) -> ToolInvokeResult:
    return ToolInvokeResult(
        invocation_id="c1", tool_name="Bash", status=status, output_type=output_type,
        output=output, **kw,
    )  # fmt: skip


def test_result_lines_by_status():
    r = request(command="npm test")
    assert result_line(r, result(duration_ms=1234)) == "✅ Bash (npm test) · 1.2 s"
    assert result_line(r, result(output_type="empty")) == "✅ Bash (npm test) completed"
    failed = result("error", error={"code": "EXIT_1", "message": "3 failing"})
    assert result_line(r, failed) == "❌ Bash (npm test) failed: 3 failing"
    assert result_line(r, result("timeout")) == "❌ Bash (npm test) timed out"
    assert result_line(r, result("cancelled")) == "❌ Bash (npm test) cancelled"
    assert result_line(None, result()) == "✅ Bash"


def test_subject_prefers_title_and_is_shortened():
    titled = ToolInvokeRequest(invocation_id="c", tool_name="Edit", input={}, title="Fix auth")
    assert running_line([titled]) == "⏳ Running: Edit (Fix auth)"
    long = request(command="x" * 200)
    line = result_line(long, result())
    assert "…" in line and len(line) < 90


def test_a_title_that_names_the_tool_does_not_say_it_twice():
    # U-28 (issue 28): agents title a call `Edit src/app.py`; it read `Edit (Edit src/app.py)`.
    def titled(title, name="Edit", **inp):
        return ToolInvokeRequest(invocation_id="c", tool_name=name, input=inp, title=title)

    assert running_line([titled("Edit src/app.py")]) == "⏳ Running: Edit (src/app.py)"
    assert running_line([titled("edit: src/app.py")]) == "⏳ Running: Edit (src/app.py)"
    assert running_line([titled("Edit", path="src/a.py")]) == "⏳ Running: Edit (src/a.py)"
    assert running_line([titled("Edit")]) == "⏳ Running: Edit"
    assert running_line([titled("Editor settings")]) == "⏳ Running: Edit (Editor settings)"
    done = ToolInvokeResult(
        invocation_id="c", tool_name="Edit", status="success", output_type="empty"
    )
    assert result_line(titled("Edit src/app.py"), done) == "✅ Edit (src/app.py) completed"


def test_web_content_always_shows_the_source_url():
    r = request("WebFetch", url="https://a.example/x")
    assert "<https://a.example/x>" in result_line(r, result(output_type="web_content", output="t"))


def test_diff_detection_and_fences_that_content_cannot_close():
    assert looks_like_diff("commit 1\n\ndiff --git a/x b/x\n")
    assert not looks_like_diff("just text\n--- not a diff")
    block = code_block(" ```\ninside\n", "diff")
    assert block.startswith("````diff\n") and block.endswith("````")
    assert fence_after(None, block) is None


def test_multi_file_diff_gets_a_header_per_file():
    diff = "diff --git a/a.py b/a.py\n-x\n+y\ndiff --git a/b.py b/b.py\n-1\n+2\n"
    rendered = render_diff(diff)
    assert rendered.startswith("**a.py**\n```diff\ndiff --git a/a.py b/a.py\n")
    assert "\n**b.py**\n```diff\n" in rendered


def test_detail_only_for_diffs_and_tasks_and_never_for_failures():
    assert result_detail(result(output="plain output")) is None
    assert result_detail(result(output_type="diff", output={"diff": "-a\n+b\n"})).startswith(
        "```diff"
    )
    assert result_detail(result("error", output_type="diff", output="-a")) is None
    not_tasks = result(output_type="structured", output={"tasks": [{"bogus": 1}]})
    assert result_detail(not_tasks) is None


def test_task_tree_survives_parent_cycles_and_unknown_parents():
    tasks = [
        Task(id="a", content="A", status="pending", parent_id="b"),
        Task(id="b", content="B", status="completed", parent_id="a"),
        Task(id="c", content="C", status="in_progress", parent_id="nobody"),
    ]
    lines = render_tasks(tasks).splitlines()
    assert lines[0] == "📋 Tasks (1/3 done)"
    assert sorted(lines[1:]) == sorted(["◐ **C**", "○ A", "● ~~B~~"])
