"""What the console user types → a `control.prompt.request` (gateway.sessions.prompt).

- A line whose first word is `/name` of a published command is a slash command (G-CMD-33);
  `/` or `/help` alone lists the commands (G-CMD-08), `/pre` with no exact match lists those
  starting with `pre` (G-CMD-14) and reads the next line.
- `@word` at the start of the line or after a space asks the file-search hook for candidates
  (later fed by the master connection through `control.file.search`); the user picks one by
  number and it becomes a file token, or answers 0 / nothing to keep `@word` as typed text.
- Everything else is typed text, escaped when the prompt is built (§16.2.2).

The hooks are plain callables so the master connection can plug in without this module
knowing about it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from adapters.console.lines import LineReader
from adapters.console.platform import ConsolePlatform
from gateway.platform import MessageRef
from gateway.sessions.prompt import CommandCache, PickedFile, PromptDraft, PromptError, slash_prompt
from rawp.events import FileCandidate, PromptRequest

FileSearch = Callable[[str], Awaitable[list[FileCandidate]]]
Commands = Callable[[], CommandCache]

# `@query` at the line start or after a space; trailing punctuation is not part of the query.
_MENTION = re.compile(r"(?:(?<=\s)|^)@(\S*[^\s,;:!?.)\]'\"])")
MAX_SHOWN = 9  # candidates offered per @ (one digit to answer)


@dataclass(frozen=True)
class ConsolePrompt:
    request: PromptRequest
    message: MessageRef  # the user's line, for the turn's reactions


class ConsoleComposer:
    def __init__(
        self,
        platform: ConsolePlatform,
        lines: LineReader,
        *,
        commands: Commands = CommandCache,
        file_search: FileSearch | None = None,
    ) -> None:
        self._platform = platform
        self._lines = lines
        self._commands = commands
        self._file_search = file_search

    async def next_prompt(self) -> ConsolePrompt | None:
        """Read lines until one makes a prompt; None at end of input."""
        while True:
            line = await self._lines.readline()
            if line is None:
                return None
            if not line.strip():
                continue
            try:
                request = await self._compose(line)
            except PromptError as exc:
                self._platform.note(f"⚠️ {exc}")
                continue
            if request is not None:
                return ConsolePrompt(request, self._platform.record_user_message(line))

    async def _compose(self, line: str) -> PromptRequest | None:
        commands = self._commands()
        if line.startswith("/"):
            matched = commands.match(line)
            if matched:
                return slash_prompt(*matched)
            name = line[1:].split(" ", 1)[0]
            if name in ("", "help") or (name and commands.listing(name)):
                listing = commands.describe("" if name == "help" else name)
                self._platform.note("\n".join(listing) or "No commands are published.")
                return None
        draft = PromptDraft()
        cursor = 0
        for mention in _MENTION.finditer(line):
            picked = await self._pick_file(mention.group(1))
            if picked is None:
                continue  # kept as typed text
            draft.add_text(line[cursor : mention.start()])
            draft.add_file(picked)
            cursor = mention.end()
        draft.add_text(line[cursor:])
        return draft.build()

    async def _pick_file(self, query: str) -> PickedFile | None:
        if self._file_search is None:
            return None
        candidates = (await self._file_search(query))[:MAX_SHOWN]
        if not candidates:
            return None
        shown = [f"@{query}:"]
        shown += [f"  [{i}] {c.path}" for i, c in enumerate(candidates, 1)]
        shown.append("Pick a file by number (0 or empty keeps the text):")
        self._platform.note("\n".join(shown))
        answer = (await self._lines.readline() or "").strip()
        if answer.isdigit() and 1 <= int(answer) <= len(candidates):
            return PickedFile.from_candidate(candidates[int(answer) - 1])
        return None
