"""The console chat platform (used by `rawp up`): a terminal that behaves like a chat app."""

from adapters.console.chat import run_chat
from adapters.console.composer import ConsoleComposer, ConsolePrompt
from adapters.console.lines import LineReader
from adapters.console.platform import CONSOLE_LIMITS, ConsoleMessage, ConsolePlatform

__all__ = [
    "CONSOLE_LIMITS",
    "ConsoleComposer",
    "ConsoleMessage",
    "ConsolePlatform",
    "ConsolePrompt",
    "LineReader",
    "run_chat",
]
