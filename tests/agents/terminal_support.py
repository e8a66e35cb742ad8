"""Run the real `claude` CLI "from the terminal" (issue 30 §2): the way a person on the machine
would, outside RAWP, in a directory of the workspace and with the HOME the client gives its
claude agent, so it writes a real transcript that the client can list and pick up."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path


async def claude_in_terminal(claude: Path, env: dict[str, str], cwd: Path, prompt: str) -> str:
    """One `claude -p … --output-format stream-json` run; Claude Code's session id."""
    process = await asyncio.create_subprocess_exec(
        str(claude), "-p", prompt, "--output-format", "stream-json", "--verbose",
        cwd=str(cwd), env={**os.environ, **env},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()[-2000:]
    lines = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    init = next(x for x in lines if x.get("type") == "system" and x.get("subtype") == "init")
    return init["session_id"]
