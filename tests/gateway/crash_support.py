"""A real master and client whose script agent streams a long answer of many blocks, for the
gateway crash tests (issue 14 §4): the agent and the tests share how the answer is made."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from gateway.rendering.chunker import split_markdown
from tests.edge.stack import Stack, start_stack
from tests.support import Processes

ANSWER = '''
def blocks(tag):
    """The answer's text blocks: short lines, and every eighth one long enough for 3 chunks."""
    out = []
    for b in range(24):
        if b % 8 == 5:
            out.append("\\n".join(f"{tag}.{b:02d}.{i:03d} " + "x" * 60 for i in range(70)))
        else:
            out.append(f"{tag}.{b:02d} is line {b} of the answer")
    out.append(f"{tag} END")
    return out
'''
RUNNER = """
import json, os, sys, time

def emit(type, payload):
    sys.stdout.write(json.dumps({"type": type, "payload": payload}) + "\\n")
    sys.stdout.flush()

tag = os.environ["RAWP_PROMPT"].split()[-1]
for index, text in enumerate(blocks(tag)):
    half = len(text) // 2
    emit("agent.text.delta", {"content_index": index, "text": text[:half]})
    emit("agent.text.delta", {"content_index": index, "text": text[half:]})
    emit("agent.text.done", {"content_index": index, "text": text})
    time.sleep(0.01)
"""
# The replica failover test's agent (tests/gateway/test_replicas_failover.py): it asks first,
# waits for the answer on stdin, then streams the same answer.
APPROVAL = """
emit("agent.interaction.request", {
    "interaction_id": f"go-{tag}", "kind": "approval", "prompt": f"Proceed with {tag}?",
    "options": [
        {"option_id": "allow", "label": "Allow once", "kind": "allow_once"},
        {"option_id": "deny", "label": "Deny", "kind": "reject_once"},
    ],
})
for line in sys.stdin:
    if json.loads(line).get("payload", {}).get("interaction_id") == f"go-{tag}":
        break
"""
namespace: dict = {}
exec(ANSWER, namespace)  # our own constant, shared with the agent script
blocks = namespace["blocks"]


def expected_chunks(tag: str) -> list[str]:
    return [chunk for text in blocks(tag) for chunk in split_markdown(text, 2000)]


@contextlib.contextmanager
def long_answer_stack(tmp: Path, owner: str, *, ask_first: bool = False):
    """Master and client processes for `owner`, the client offering the agent `long`;
    `ask_first`: it asks for an approval (`Proceed with <tag>?`) before answering."""
    script = tmp / "long_answer.py"
    head, stream = RUNNER.split("for index, text", 1)
    runner = head + (APPROVAL if ask_first else "") + "for index, text" + stream
    script.write_text(ANSWER + runner)
    agents = tmp / "agents.toml"
    agents.write_text(
        f'[agents.long]\nkind = "script"\nmode = "jsonl"\n'
        f'command = ["{sys.executable}", "{script}"]\n'
    )
    processes = Processes()
    made: Stack | None = None
    try:
        made = start_stack(processes, tmp / "stack", owner)
        made.start_client("--agents-file", str(agents))
        yield made
    finally:
        if made is not None:
            made.proxy.close()
        processes.close()
