"""A fake `claude` executable that replays a recorded stream-json transcript.

    python fake_claude.py TRANSCRIPT.jsonl [the CLI's flags…]

It speaks the CLI's side of the protocol just enough for the `claude-code` kind: it answers
`initialize` with the `commands` of the transcript's first line when that line is
`{"fake": "initialize", "commands": [...]}`, and for every user message on stdin it writes the
transcript's next lines up to and including a `result` line. A `control_request` line in the
transcript is written and then the fake waits for its `control_response` on stdin. It is
written with the standard library only, so the kind runs it like any other binary.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    with open(sys.argv[1]) as transcript:
        lines = [json.loads(line) for line in transcript if line.strip()]
    commands = []
    if lines and lines[0].get("fake") == "initialize":
        commands = lines.pop(0).get("commands", [])
    for raw in sys.stdin:
        message = json.loads(raw)
        if message.get("type") == "control_request":
            request = message["request"]
            answer = {"commands": commands} if request.get("subtype") == "initialize" else {}
            write(
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "success",
                        "request_id": message["request_id"],
                        "response": answer,
                    },
                }
            )
        elif message.get("type") == "user":
            while lines:
                line = lines.pop(0)
                write(line)
                if line.get("type") == "control_request":
                    sys.stdin.readline()  # its control_response
                if line.get("type") == "result":
                    break
    return 0


def write(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
