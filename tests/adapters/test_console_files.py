"""A file the agent sends, on the console: it cannot show files, so one line names it. The
frames are the demo agent's own `agent.file` lines (its `bigfile` PNG in four pieces)."""

from __future__ import annotations

import contextlib
import io
import json

from adapters.console import ConsolePlatform, LineReader
from client import demo_agent
from gateway.rendering.render import SessionRenderer
from tests.gateway.support import frame


async def _nowhere(_frame) -> None:
    raise AssertionError("nothing is sent to the session here")


def demo_file_frames() -> list:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        demo_agent.send_file("demo-plot", "plot.png", "image/png", demo_agent.demo_png())
    return [frame(e["type"], e["payload"]) for e in map(json.loads, out.getvalue().splitlines())]


async def test_the_console_names_a_file_it_cannot_show():
    frames = demo_file_frames()
    assert len(frames) == 4 and [f.payload.final for f in frames] == [False] * 3 + [True]
    out = io.StringIO()
    platform = ConsolePlatform(out, LineReader(io.StringIO("")))
    renderer = SessionRenderer(platform, platform.conversation, "s-1", send_frame=_nowhere)
    for each in frames:
        await renderer.feed(each)
    await renderer.close()
    size = len(demo_agent.demo_png()) / 1024
    assert out.getvalue().count("📎") == 1
    assert (
        f"📎 The agent sent plot.png ({size:.1f} KB); the console here cannot show files, "
        "so it was not posted."
    ) in out.getvalue()
