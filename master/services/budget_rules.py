"""Spending budgets as the master's operator configures them (issue 16 §4; the file format is in
docs/operations-master.md, "Budgets").

Rules:

1. Three budgets exist: `cost_per_day` (USD, since 00:00 UTC), `cost_per_month` (USD, since the
   1st 00:00 UTC) and `tokens_per_session` (input + output tokens of one session).
2. `[default]` holds every user's budgets; `[users."<subject>"]` replaces single keys of it for
   one user (`"unlimited"` lifts a default). `[nodes."<node_id>"]` gives one node budgets of its
   own, counted over every session on that node, on top of its owner's. No file, or one that
   names no budget, means nothing is limited.
3. The file is read once, when the master starts; anything it cannot use — a TOML syntax error,
   an unknown section or key, a negative or non-numeric amount — stops the start with one line
   that names the file and the key (`BudgetFileError`).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

UNLIMITED = "unlimited"
KINDS = ("cost_per_day", "cost_per_month", "tokens_per_session")
SECTIONS = ("default", "users", "nodes")


class BudgetFileError(ValueError):
    """The budgets file cannot be used; the message is one line for the operator."""


@dataclass(frozen=True)
class BudgetLimits:
    """One scope's budgets; None: not limited."""

    cost_per_day: float | None = None
    cost_per_month: float | None = None
    tokens_per_session: int | None = None

    def items(self) -> list[tuple[str, float]]:
        """The budgets that are set, in the order of `KINDS`."""
        return [(k, v) for k in KINDS if (v := getattr(self, k)) is not None]


@dataclass(frozen=True)
class BudgetRules:
    default: BudgetLimits = field(default_factory=BudgetLimits)
    users: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # subject → overrides
    nodes: Mapping[str, BudgetLimits] = field(default_factory=dict)

    @cached_property  # asked on every prompt; the rules never change after start
    def enabled(self) -> bool:
        limits = [self.default, *self.nodes.values(), *(self.for_user(u) for u in self.users)]
        return any(limit.items() for limit in limits)

    def for_user(self, subject: str) -> BudgetLimits:
        """Rule 2: the defaults with the user's own keys in their place."""
        overrides = self.users.get(subject)
        return replace(self.default, **overrides) if overrides else self.default

    def for_node(self, node_id: str) -> BudgetLimits:
        return self.nodes.get(node_id, BudgetLimits())


def _amount(where: str, key: str, value: Any, *, allow_unlimited: bool) -> float | int | None:
    if allow_unlimited and value == UNLIMITED:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        hint = f' or "{UNLIMITED}"' if allow_unlimited else ""
        raise BudgetFileError(f"{where}.{key} must be a number{hint}, not {value!r}")
    if not math.isfinite(value) or value < 0:
        raise BudgetFileError(f"{where}.{key} must be zero or more, not {value!r}")
    if key == "tokens_per_session":
        if value != int(value):
            raise BudgetFileError(f"{where}.{key} must be a whole number, not {value!r}")
        return int(value)
    return float(value)


def _keys(where: str, table: Any, *, allow_unlimited: bool) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise BudgetFileError(f"{where} must be a table of budgets")
    unknown = sorted(set(table) - set(KINDS))
    if unknown:
        raise BudgetFileError(f"{where}.{unknown[0]} is not a budget (known: {', '.join(KINDS)})")
    return {
        key: _amount(where, key, value, allow_unlimited=allow_unlimited)
        for key, value in table.items()
    }


def _named(where: str, table: Any) -> dict[str, Any]:
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise BudgetFileError(f'[{where}] must hold tables such as [{where}."<id>"]')
    return table


def parse_budgets(data: Mapping[str, Any]) -> BudgetRules:
    unknown = sorted(set(data) - set(SECTIONS))
    if unknown:
        raise BudgetFileError(
            f'{unknown[0]} is not a section (known: [default], [users."…"], [nodes."…"])'
        )
    default = BudgetLimits(**_keys("default", data.get("default", {}), allow_unlimited=False))
    users = {
        subject: _keys(f'users."{subject}"', table, allow_unlimited=True)
        for subject, table in _named("users", data.get("users", {})).items()
    }
    nodes = {
        node_id: BudgetLimits(**_keys(f'nodes."{node_id}"', table, allow_unlimited=False))
        for node_id, table in _named("nodes", data.get("nodes", {})).items()
    }
    return BudgetRules(default=default, users=users, nodes=nodes)


def load_budgets(path: Path) -> BudgetRules:
    """Rule 3: the file's rules, or `BudgetFileError` with one line naming what is wrong."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BudgetFileError(f"budgets file {path}: cannot be read ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BudgetFileError(f"budgets file {path}: not valid TOML ({exc})") from None
    try:
        return parse_budgets(data)
    except BudgetFileError as exc:
        raise BudgetFileError(f"budgets file {path}: {exc}") from None
