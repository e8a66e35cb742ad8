"""What `rawp doctor` reports: one finding per check, a ✅ or a ❌ with the fix.

A finding's text never holds a secret: checks name the variable (`DISCORD_BOT_TOKEN`), never
its value, and error texts from the network are cut short.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    ok: bool
    what: str  # "master http://… answers: rawp 0.1.0"
    fix: str = ""  # for a ❌: what to change, in words an operator can act on

    def line(self) -> str:
        if self.ok:
            return f"✅ {self.what}"
        return f"❌ {self.what} — fix: {self.fix}"


def good(what: str) -> Finding:
    return Finding(True, what)


def bad(what: str, fix: str) -> Finding:
    return Finding(False, what, fix)


def cause(exc: BaseException) -> str:
    """A network error in one short line (no traceback, no URL query that could hold a token)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:160]
