"""Gateway benchmark (issue 19 §6): `.venv/bin/python bench/gateway.py`.

What a user's turn costs on each platform, measured at the platform's wire. The real renderer
(`gateway.rendering.render.SessionRenderer`, redaction on, as a session renders) draws on the real
adapters — discord.py logged in to the fake Discord, slack_sdk/Bolt against the fake Slack
(tests/fakes) — and the fakes record every call they receive, with its arrival time. Frames are
fed as the edge link hands them over, with the agent's pauses between them
(tests/gateway/demo_turns.py); the master, the client and the link's WebSocket are not in the
path (their relay cost is bench/relay.py's).

1. Platform calls per turn, by method: a short turn (what `rawp demo-agent` sends for a plain
   prompt: states, thinking, an `Edit` with its diff, a task list, a short answer), a long
   answer (the same for a `long` prompt) and a tool-heavy turn (ten tools over about 4 s).
   Each is run `--repeat` times after one warm-up turn; the median run's calls are listed.
2. Turn end → last chunk: an answer whose `done` never came is sent at `session.turn.end`; the
   delay from handing that frame to the renderer to the fake receiving the last chunk, median
   and p99 over `--turns` turns. Beside it, the platform's own latency in the same run: from
   calling the adapter's `send_message` to the fake receiving the post.
3. Many conversations on one process: `--conversations` renderers on the Discord adapter, one
   thread each, every one having rendered a short turn (frames fed at once, ten at a time);
   then `--active` of them (10 %, as bench/scale.py streams on 10 % of its sessions) run a
   short turn with the agent's pauses, their starts spread over `--spread` s. RSS of this
   process (which also holds the fake Discord and the messages it stored) before and after,
   and the render delay of each active answer (its `agent.text.done` handed over → the fake
   receives the post).

Targets (issue 19): a short turn ≤ 5 calls on Discord and ≤ 6 on Slack; turn end → last chunk
≤ 50 ms plus the platform's latency (judged on p99 minus the bare post's p99); 1,000
conversations ≤ 300 MB. This prints the tables; bench/run_all.py writes them into
docs/benchmarks.md ("Gateway").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.platform import ChatPlatform, ConversationRef, MessageRef
from gateway.rendering.render import SessionRenderer
from tests.adapters.chat_support import RecordingHooks
from tests.adapters.discord_support import running_bot
from tests.adapters.slack_support import running_app
from tests.fakes.calls import Call
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack
from tests.gateway import demo_turns
from tests.gateway.demo_turns import PROMPT_ID, SESSION

SCENARIOS = {
    "short turn": demo_turns.short_turn,
    "long answer": demo_turns.long_turn,
    "tool-heavy turn": demo_turns.tool_heavy_turn,
}
TARGET_CALLS = {"discord": 5, "slack": 6}


async def _no_frames(frame) -> None:
    return None  # no interaction is answered in these turns


@dataclass
class Side:
    """One platform: its fake, the adapter, how to open a conversation and a user message."""

    name: str
    fake: FakeDiscord | FakeSlack
    platform: ChatPlatform
    conversation: Callable
    user_message: Callable

    def calls_since(self, start: int) -> list[Call]:
        return [c for c in self.fake.log.calls[start:] if c.method != "WS"]

    def label(self, call: Call) -> str:
        if self.name == "slack":
            return call.path
        return f"{call.method} {re.sub(r'/[0-9]+', '/{id}', call.path)}"

    def is_post(self, call: Call) -> bool:
        if self.name == "slack":
            return call.path == "chat.postMessage"
        return call.method == "POST" and call.path.endswith("/messages")


@contextlib.asynccontextmanager
async def discord_side() -> AsyncIterator[Side]:
    async with FakeDiscord() as fake, running_bot(fake, RecordingHooks()) as bot:

        async def conversation(n: int) -> ConversationRef:
            thread = await fake.add_thread(f"session {n}")
            return ConversationRef("discord", fake.world.channel_id, thread["id"])

        async def user_message(conversation: ConversationRef) -> MessageRef:
            message = fake.world.message(conversation.thread_id, "fix it", author=fake.world.alice)
            fake.rest.messages[message["id"]] = message  # as if typed: no event to the bot
            return MessageRef(conversation, message["id"])

        yield Side("discord", fake, bot.platform, conversation, user_message)


@contextlib.asynccontextmanager
async def slack_side() -> AsyncIterator[Side]:
    async with FakeSlack() as fake, running_app(fake, RecordingHooks()) as bot:

        async def conversation(n: int) -> ConversationRef:
            parent = await bot.client.chat_postMessage(
                channel=fake.world.channel_id, text=f"🧵 session {n}"
            )
            return ConversationRef("slack", fake.world.channel_id, parent["ts"])

        async def user_message(conversation: ConversationRef) -> MessageRef:
            event = fake.world.message_event("fix it", thread_ts=conversation.thread_id)
            fake.remember_message(event)
            return MessageRef(conversation, event["ts"])

        yield Side("slack", fake, bot.platform, conversation, user_message)


SIDES = {"discord": discord_side, "slack": slack_side}


async def play(renderer: SessionRenderer, steps) -> None:
    for frame, pause in steps:
        await renderer.feed(frame)
        if pause:
            await asyncio.sleep(pause)


async def one_turn(side: Side, n: int, steps) -> list[Call]:
    conversation = await side.conversation(n)
    message = await side.user_message(conversation)
    renderer = SessionRenderer(side.platform, conversation, SESSION, send_frame=_no_frames)
    renderer.expect_prompt(PROMPT_ID, message, "alice")
    start = len(side.fake.log)
    await play(renderer, steps)
    await asyncio.sleep(0.2)  # anything the turn left running would call now
    calls = side.calls_since(start)
    await renderer.close()
    return calls


async def calls_per_turn(side: Side, repeat: int) -> dict[str, list[str]]:
    """Scenario → the call labels of its median run (by count)."""
    out = {}
    await one_turn(side, -1, demo_turns.short_turn("warm-up"))  # connections opened, not counted
    for name, build in SCENARIOS.items():
        runs = [
            [side.label(c) for c in await one_turn(side, i, build(f"{name}-{i}"))]
            for i in range(repeat)
        ]
        runs.sort(key=len)
        out[name] = runs[len(runs) // 2]
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def end_to_last_chunk(side: Side, turns: int) -> dict[str, float]:
    """Turn end → the fake receives the last chunk; and a bare post's latency, interleaved."""
    conversation = await side.conversation(0)
    message = await side.user_message(conversation)
    renderer = SessionRenderer(side.platform, conversation, SESSION, send_frame=_no_frames)
    delays, bare = [], []
    for i in range(turns):
        renderer.expect_prompt(PROMPT_ID, message, "alice")
        *body, (end, _) = demo_turns.end_flush_turn(f"flush-{i}")
        await play(renderer, body)
        start = len(side.fake.log)
        sent_at = time.monotonic()
        await renderer.feed(end)
        posts = [c for c in side.calls_since(start) if side.is_post(c)]
        delays.append((posts[-1].at - sent_at) * 1000)
        start = len(side.fake.log)
        sent_at = time.monotonic()
        await side.platform.send_message(conversation, f"bare post {i}")
        bare.append((side.calls_since(start)[-1].at - sent_at) * 1000)
    await renderer.close()
    return {
        "p50": statistics.median(delays),
        "p99": percentile(delays, 0.99),
        "bare_p50": statistics.median(bare),
        "bare_p99": percentile(bare, 0.99),
    }


async def play_at_once(renderer: SessionRenderer, message: MessageRef, steps) -> None:
    renderer.expect_prompt(PROMPT_ID, message, "alice")
    await play(renderer, [(frame, 0.0) for frame, _ in steps])


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def many_conversations(count: int, active: int, spread_s: float) -> dict[str, float]:
    async with discord_side() as side:
        baseline = rss_mb()
        conversations = [await side.conversation(n) for n in range(count)]
        messages = [await side.user_message(c) for c in conversations]
        renderers = [
            SessionRenderer(side.platform, c, f"{SESSION[:-4]}{n:04d}", send_frame=_no_frames)
            for n, c in enumerate(conversations)
        ]
        for batch in range(0, count, 10):  # every conversation has had a turn
            await asyncio.gather(
                *(
                    play_at_once(renderers[n], messages[n], demo_turns.short_turn(f"warm-{n}"))
                    for n in range(batch, min(count, batch + 10))
                )
            )
        opened = rss_mb()
        delays: list[float] = []
        peak = opened
        start = len(side.fake.log)

        async def turn(n: int) -> None:
            await asyncio.sleep(spread_s * n / active)
            renderer = renderers[n * (count // active)]
            renderer.expect_prompt(PROMPT_ID, messages[n * (count // active)], "alice")
            thread = renderer.conversation.thread_id
            for frame, pause in demo_turns.short_turn(f"many-{n}"):
                if frame.type == "agent.text.done":
                    start, handed = len(side.fake.log), time.monotonic()
                    await renderer.feed(frame)
                    posted = [
                        c for c in side.calls_since(start)
                        if side.is_post(c) and f"/{thread}/" in c.path
                    ]  # fmt: skip
                    delays.append((posted[-1].at - handed) * 1000)
                else:
                    await renderer.feed(frame)
                if pause:
                    await asyncio.sleep(pause)

        async def sample() -> None:
            nonlocal peak
            while True:
                peak = max(peak, rss_mb())
                await asyncio.sleep(0.2)

        sampler = asyncio.create_task(sample())
        began = time.monotonic()
        try:
            await asyncio.gather(*(turn(n) for n in range(active)))
        finally:
            sampler.cancel()
        took = time.monotonic() - began
        after = rss_mb()
        for renderer in renderers:
            await renderer.close()
        return {
            "count": count,
            "active": active,
            "baseline": baseline,
            "opened": opened,
            "peak": max(peak, after),
            "after": after,
            "p50": statistics.median(delays),
            "p99": percentile(delays, 0.99),
            "took": took,
            "calls": len(side.calls_since(start)),
        }


def by_method(labels: list[str]) -> str:
    return ", ".join(f"{label} ×{n}" for label, n in Counter(labels).most_common())


def report(figures: dict) -> str:
    calls, latency, many = figures["calls"], figures["latency"], figures["many"]
    rows = ["| platform | turn | calls | target | by method |", "|---|---|---|---|---|"]
    for platform, scenarios in calls.items():
        for name, labels in scenarios.items():
            target = f"≤ {TARGET_CALLS[platform]}" if name == "short turn" else ""
            rows.append(f"| {platform} | {name} | {len(labels)} | {target} | {by_method(labels)} |")
    rows += ["", "| platform | turn end → last chunk p50 / p99 | platform latency (a bare post) "
             "p50 / p99 | added by the gateway (p99 − p99) |", "|---|---|---|---|"]  # fmt: skip
    for platform, f in latency.items():
        rows.append(
            f"| {platform} | {f['p50']:.1f} / {f['p99']:.1f} ms | {f['bare_p50']:.1f} / "
            f"{f['bare_p99']:.1f} ms | {f['p99'] - f['bare_p99']:+.1f} ms |"
        )
    if many:
        rows += [
            "",
            "| measure | figure |",
            "|---|---|",
            f"| RSS: fake Discord and bot up (baseline) | {many['baseline']:.0f} MB |",
            f"| RSS: {many['count']:,} conversations, each after one turn | "
            f"{many['opened']:.0f} MB |",
            f"| RSS peak while {many['active']} of them run a short turn | {many['peak']:.0f} MB |",
            f"| render delay (`text.done` → fake receives the post) p50 / p99 | "
            f"{many['p50']:.1f} / {many['p99']:.1f} ms |",
            f"| the {many['active']} turns done in | {many['took']:.1f} s "
            f"({many['calls']:,} platform calls) |",
        ]
    return "\n".join(rows)


def targets(figures: dict) -> list[tuple[str, bool, str]]:
    """(target, met, measured) for docs/benchmarks.md's table of targets (bench/run_all.py)."""
    short = {p: len(s["short turn"]) for p, s in figures["calls"].items()}
    added = {p: f["p99"] - f["bare_p99"] for p, f in figures["latency"].items()}
    out = [
        (
            "Gateway: a short turn ≤ 5 platform calls on Discord, ≤ 6 on Slack",
            all(short[p] <= most for p, most in TARGET_CALLS.items()),
            f"Discord {short['discord']}, Slack {short['slack']}",
        ),
        (
            "Gateway: turn end → last chunk ≤ 50 ms plus the platform's latency (p99)",
            all(a <= 50 for a in added.values()),
            ", ".join(f"{p} {a:+.1f} ms" for p, a in added.items()),
        ),
    ]
    if many := figures["many"]:
        out.append(
            (
                f"Gateway: {many['count']:,} conversations on one process ≤ 300 MB",
                many["peak"] <= 300,
                f"{many['peak']:.0f} MB (with the fake Discord in the process)",
            )
        )
    return out


def run(args: argparse.Namespace | None = None) -> dict:
    """Every figure, measured now (the defaults of `main` when `args` is None)."""
    return asyncio.run(measure(args or parser().parse_args([])))


async def measure(args: argparse.Namespace) -> dict:
    calls, latency = {}, {}
    for platform, make in SIDES.items():
        print(f"{platform}: calls per turn …", flush=True)
        async with make() as side:
            calls[platform] = await calls_per_turn(side, args.repeat)
            print(f"{platform}: turn end → last chunk …", flush=True)
            latency[platform] = await end_to_last_chunk(side, args.turns)
    many = None
    if args.conversations:
        print(f"{args.conversations} conversations …", flush=True)
        many = await many_conversations(args.conversations, args.active, args.spread)
    return {"calls": calls, "latency": latency, "many": many}


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each turn (median)")
    parser.add_argument("--turns", type=int, default=200, help="turns for the end delay")
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--active", type=int, default=100, help="conversations running a turn")
    parser.add_argument("--spread", type=float, default=5.0, help="seconds to start those in")
    return parser


def main() -> int:
    args = parser().parse_args()
    logging.basicConfig(level=logging.ERROR)
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"load average at start: {', '.join(load)}", flush=True)
    figures = run(args)
    print(report(figures))
    print()
    for name, met, measured in targets(figures):
        print(f"{name}: {measured} — {'met' if met else 'MISSED'}")
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"load average at the end: {', '.join(load)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
