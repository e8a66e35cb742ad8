"""Rendering benchmark (issue 7 §5): `.venv/bin/python bench/render.py`.

A 100 KB agent answer (headings, paragraphs with bold, italics, inline code and links, lists,
and fenced code blocks, some longer than one Discord message) is cut and rendered the way the
gateway does it:

- **Discord**: `gateway.rendering.chunker.split_markdown(text, 2000)` (A-35);
- **Slack**: `split_markdown(text, 40000)` (the message limit the renderer uses), then each
  message through `adapters.slack.mrkdwn.messages_of` (mrkdwn conversion and escaping, 3,000-
  character section blocks, 50 blocks a message) — the whole pure path to the Web API call.

With redaction on (issue 15 §3), as a session renders: the text is redacted whole
(`gateway.redaction.redact.Redactor`, here with the fingerprints of ten `.env` values) and then cut,
the path `RedactingPlatform.chunks` takes — for Discord and for Slack as above.

Baseline in the same run: `text.split("\\n")` of the same text, the least any renderer does.
Each is timed over many repetitions; the median and the worst are reported. Target: ≤ 5 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.slack.mrkdwn import messages_of
from gateway.redaction.redact import Redactor, prepare
from gateway.rendering.chunker import split_markdown
from rawp.events import SecretFingerprints
from rawp.fingerprints import fingerprints, new_salt

SIZE = 100_000
REPEAT = 50
DISCORD_LIMIT = 2_000
SLACK_MESSAGE_LIMIT = 40_000
REDACTED = ("discord_redacted", "slack_redacted")


def answer(size: int = SIZE) -> str:
    """A deterministic markdown answer of about `size` characters."""
    parts: list[str] = []
    total, section = 0, 0
    while total < size:
        section += 1
        lines = [
            f"## Step {section}: what changed in `module_{section}.py`",
            "",
            f"The **parser** now reads *every* line once; see [the spec](https://example.com/"
            f"spec#{section}) and `parse_frame()` for the rules. Inputs like `a < b && c > d` "
            "keep their characters & their order. ~~The old path~~ is gone.",
            "",
            "- first, the frame is checked against its schema",
            "- then the **session** is looked up (`sessions[sid]`)",
            "- last, the reply is sent",
            "",
        ]
        code_lines = 12 if section % 5 else 120  # every fifth block is longer than a message
        lines.append("```python")
        for n in range(code_lines):
            lines.append(f"def handler_{section}_{n}(frame):  # <{n}> & more")
            lines.append(f"    return {{'ok': frame['type'] == 'x{n}', 'n': {n}}}")
        lines += ["```", ""]
        block = "\n".join(lines) + "\n"
        parts.append(block)
        total += len(block)
    return "".join(parts)[:size]


def timed(work, text: str, repeat: int) -> tuple[float, float, int]:
    samples, pieces = [], 0
    for _ in range(repeat):
        began = time.perf_counter()
        pieces = len(work(text))
        samples.append(time.perf_counter() - began)
    return statistics.median(samples), max(samples), pieces


def discord(text: str) -> list[str]:
    chunks = split_markdown(text, DISCORD_LIMIT)
    if any(len(chunk) > DISCORD_LIMIT for chunk in chunks):
        raise RuntimeError("a Discord chunk exceeds the limit")
    return chunks


def slack(text: str) -> list[list[dict]]:
    return [
        message
        for piece in split_markdown(text, SLACK_MESSAGE_LIMIT)
        for message in messages_of(piece)
    ]


def redactor() -> Redactor:
    """A session's redactor with the fingerprints of ten `.env` values of usual lengths."""
    prepare()
    salt = new_salt()
    values = [f"value-{n:02d}-" + "x7Q" * (n + 2) for n in range(10)]
    lengths, hashes = fingerprints(values, salt)
    made = Redactor()
    made.use_fingerprints(SecretFingerprints(salt=salt, lengths=lengths, hashes=hashes))
    return made


REDACTOR = redactor()


def discord_redacted(text: str) -> list[str]:
    return discord(REDACTOR.redact(text))


def slack_redacted(text: str) -> list[list[dict]]:
    return slack(REDACTOR.redact(text))


def baseline(text: str) -> list[str]:
    return text.split("\n")


def run(repeat: int = REPEAT, size: int = SIZE) -> dict[str, float]:
    text = answer(size)
    figures: dict[str, float] = {"chars": len(text), "fences": text.count("```")}
    works = (
        ("baseline", baseline),
        ("discord", discord),
        ("slack", slack),
        ("redact", REDACTOR.redact),
        ("discord_redacted", discord_redacted),
        ("slack_redacted", slack_redacted),
    )
    for name, work in works:
        work(text)  # warm up: regexes compiled, caches filled
        median, worst, pieces = timed(work, text, repeat)
        figures[f"{name}_ms"] = median * 1000
        figures[f"{name}_max_ms"] = worst * 1000
        figures[f"{name}_pieces"] = pieces
    figures["met"] = float(
        all(figures[f"{n}_max_ms"] <= 5 for n in ("discord", "slack", *REDACTED))
    )
    return figures


def report(figures: dict[str, float]) -> str:
    base = figures["baseline_ms"]
    rows = [
        "| work on the 100 KB answer | median | worst | output | comparison |",
        "|---|---|---|---|---|",
        f'| `text.split("\\n")` (baseline) | {base:.3f} ms | '
        f"{figures['baseline_max_ms']:.3f} ms | {figures['baseline_pieces']:.0f} lines | 1× |",
    ]
    for name, label, unit in (
        ("discord", "Discord: chunks of 2,000", "messages"),
        ("slack", "Slack: chunks + mrkdwn blocks", "messages"),
        ("redact", "redaction alone (formats + 10 `.env` fingerprints)", "characters out"),
        ("discord_redacted", "Discord, redaction on", "messages"),
        ("slack_redacted", "Slack, redaction on", "messages"),
    ):
        rows.append(
            f"| {label} | {figures[f'{name}_ms']:.2f} ms | {figures[f'{name}_max_ms']:.2f} ms | "
            f"{figures[f'{name}_pieces']:.0f} {unit} | {figures[f'{name}_ms'] / base:.0f}× "
            "baseline (target ≤ 5 ms) |"
        )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=REPEAT)
    args = parser.parse_args()
    figures = run(args.repeat)
    print(f"answer: {figures['chars']:,.0f} characters, {figures['fences'] // 2:.0f} code blocks")
    print(report(figures))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{os.cpu_count()} CPUs; load average after the run: {load}")
    verdict = "met" if figures["met"] else "NOT met"
    print(f"target (worst ≤ 5 ms, both platforms, redaction off and on): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
