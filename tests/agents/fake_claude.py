"""A fake `claude` executable that replays a recorded stream-json transcript.

    python fake_claude.py TRANSCRIPT.jsonl [the CLI's flags…]

It speaks the CLI's side of the protocol just enough for the `claude-code` kind: it answers
`initialize` with the `commands` of the transcript's first line when that line is
`{"fake": "initialize", "commands": [...]}`, and for every user message on stdin it writes the
transcript's next lines up to and including a `result` line. A `control_request` line in the
transcript is written and then the fake waits for its `control_response` on stdin. A
`{"fake": "crash"}` line makes it exit with status 3 mid-turn (and removes that line from the
file, so the next process gets past it); `refuse_resume` in the first line makes it refuse
`--resume=…` the way the CLI does when it never saved the conversation. It is written with the
standard library only, so the kind runs it like any other binary.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    with open(sys.argv[1]) as transcript:
        lines = [json.loads(line) for line in transcript if line.strip()]
    commands = []
    if lines and lines[0].get("fake") == "initialize":
        setup = lines[0]
        commands = setup.get("commands", [])
        if setup.get("refuse_resume") and any(a.startswith("--resume=") for a in sys.argv):
            sys.stderr.write("No conversation found with that session ID\n")
            return 1
        lines.pop(0)
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
                if line.get("fake") == "crash":  # die mid-turn, once: the file forgets it
                    with open(sys.argv[1]) as transcript:
                        kept = [x for x in transcript if '"crash"' not in x]
                    with open(sys.argv[1], "w") as transcript:
                        transcript.writelines(kept)
                    sys.stderr.write("fatal: the fake crashed\n")
                    return 3
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
