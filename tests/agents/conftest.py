"""The real agents for the live tests: installed with npm, once per run, into tests/agents/node.

`tests/agents/node/package.json` (and its lock file) pins `@anthropic-ai/claude-code` and
`@zed-industries/claude-code-acp`. The first test that needs them runs `npm ci` there (only
when node_modules is missing or older than the lock file); without npm, or when the registry
cannot be reached, the live tests are skipped with a reason that says so.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

NODE_DIR = Path(__file__).parent / "node"
MODULES = NODE_DIR / "node_modules"


@dataclass(frozen=True)
class NodeAgents:
    claude: Path  # the native `claude` binary
    acp: list[str]  # argv of the Claude Code ACP adapter


def _install() -> str | None:
    """Run `npm ci` when needed; return why the agents cannot be had, or None."""
    npm = shutil.which("npm")
    if npm is None:
        return (
            "npm is not installed: the claude-code and acp tests install "
            "@anthropic-ai/claude-code and @zed-industries/claude-code-acp with it "
            "(tests/agents/node/package.json); install Node.js 20+ and npm to run them"
        )
    # The suite's two workers may both get here: one installs while the other waits on the
    # lock, then finds the stamp fresh. Two `npm ci` at once in one folder delete each other's
    # files (the native claude binary went missing that way).
    with (NODE_DIR / ".install.lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        return _install_locked(npm)


def _install_locked(npm: str) -> str | None:
    lock = NODE_DIR / "package-lock.json"
    stamp = MODULES / ".package-lock.json"
    if stamp.exists() and stamp.stat().st_mtime >= lock.stat().st_mtime:
        return None
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        return (
            f"`npm ci` in {NODE_DIR} failed (is the npm registry reachable?): {done.stderr[-800:]}"
        )
    return None


def _claude_binary() -> Path | None:
    # The wrapper package's postinstall copies the native binary over bin/claude.exe; npm may
    # not run install scripts, so use the platform package's binary directly.
    for candidate in sorted((MODULES / "@anthropic-ai").glob("claude-code-*/claude")):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="session")
def node_agents() -> NodeAgents:
    problem = _install()
    if problem:
        pytest.skip(problem)
    claude = _claude_binary()
    if claude is None:
        pytest.skip(f"no native claude binary for this platform under {MODULES}/@anthropic-ai")
    node = shutil.which("node")
    entry = MODULES / "@zed-industries" / "claude-code-acp" / "dist" / "index.js"
    if node is None or not entry.exists():
        pytest.skip("node or the claude-code-acp adapter is missing after npm ci")
    return NodeAgents(claude=claude, acp=[node, str(entry)])


def model_env(base_url: str, home: Path) -> dict[str, str]:
    """What the real agents need to run offline against the fake model, as root, isolated."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "IS_SANDBOX": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
