"""Recording conversation hooks shared by the Discord and Slack adapter tests."""

from __future__ import annotations

from gateway.platform import ConversationHooks, Invocation, StaleChoice, Suggestion
from rawp.events import Command, FileCandidate, PromptRequest


class RecordingHooks(ConversationHooks):
    """The conversation layer's seam, recording what the adapter hands over."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.files = [
            FileCandidate(path=f"src/mod{n}.py", name=f"mod{n}.py", directory="src")
            for n in range(40)
        ]
        self.commands = [Command(name="compact", description="Shrink the context")]

    async def start_session(
        self, invocation: Invocation, node: str, agent: str, worktree: bool = False
    ):
        self.calls.append(("start", invocation, node, agent, worktree))
        return f"started {agent} on {node}"

    async def prompt(self, invocation: Invocation, request: PromptRequest):
        self.calls.append(("prompt", invocation, request))
        return None

    async def list_nodes(self, invocation: Invocation):
        self.calls.append(("nodes", invocation))
        return "laptop · online"

    async def usage(self, invocation: Invocation):
        self.calls.append(("usage", invocation))
        return "📊 usage for " + invocation.user_id

    async def suggest_nodes(self, invocation: Invocation, typed: str):
        return [Suggestion(f"node {n}", f"node-{n}") for n in range(30) if str(n).startswith(typed)]

    async def search_files(self, invocation: Invocation, typed: str):
        self.calls.append(("search", invocation, typed))
        return [c for c in self.files if typed in c.path]

    async def agent_commands(self, invocation: Invocation):
        return self.commands

    async def stale_choice(self, stale: StaleChoice):
        self.calls.append(("stale", stale))
        return "That question was already answered."

    def of(self, kind: str) -> list[tuple]:
        return [c for c in self.calls if c[0] == kind]
