"""The budgets file (master.services.budget_rules): what it means, and that anything it cannot
use stops the master's start with one line naming the file and the key."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from master.services.budget_rules import (
    KINDS,
    BudgetFileError,
    BudgetLimits,
    BudgetRules,
    load_budgets,
    parse_budgets,
)

EXAMPLE = """
[default]
cost_per_day = 5
cost_per_month = 50.5
tokens_per_session = 2_000_000

[users."discord:123"]
cost_per_day = 20.0
tokens_per_session = "unlimited"

[nodes."node-1"]
cost_per_month = 10
"""


def test_defaults_overrides_and_node_budgets(tmp_path):
    path = tmp_path / "budgets.toml"
    path.write_text(EXAMPLE)
    rules = load_budgets(path)
    assert rules.enabled
    assert rules.for_user("slack:T1:U2") == BudgetLimits(5.0, 50.5, 2_000_000)
    # One key replaced, one lifted, the third inherited from [default].
    assert rules.for_user("discord:123") == BudgetLimits(20.0, 50.5, None)
    assert rules.for_node("node-1") == BudgetLimits(cost_per_month=10.0)
    assert rules.for_node("node-2") == BudgetLimits()  # a node has budgets only when named
    assert rules.for_user("discord:123").items() == [
        ("cost_per_day", 20.0),
        ("cost_per_month", 50.5),
    ]


def test_no_budget_named_limits_nothing(tmp_path):
    path = tmp_path / "empty.toml"
    path.write_text("# budgets come later\n[default]\n")
    assert not load_budgets(path).enabled
    assert not BudgetRules().enabled


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("[default]\ncost_per_day = -1\n", "default.cost_per_day must be zero or more"),
        ("[default]\ncost_per_day = 'lots'\n", "default.cost_per_day must be a number"),
        ("[default]\ncost_per_day = 'unlimited'\n", "default.cost_per_day must be a number"),
        ("[default]\ncost_per_week = 1\n", "default.cost_per_week is not a budget"),
        ("[default]\ntokens_per_session = 1.5\n", "must be a whole number"),
        ("[default]\ncost_per_day = true\n", "must be a number"),
        ("[defaults]\ncost_per_day = 1\n", "defaults is not a section"),
        ('[users."a:1"]\nspend = 1\n', 'users."a:1".spend is not a budget'),
        ("[nodes]\nx = 1\n", '[nodes] must hold tables such as [nodes."<id>"]'),
        ('[nodes."n"]\ncost_per_day = "unlimited"\n', 'nodes."n".cost_per_day must be a number'),
        ("[default\n", "not valid TOML"),
    ],
    ids=lambda value: value.splitlines()[0][:30] if "\n" in value else value[:30],
)
def test_a_bad_file_is_one_line_naming_the_key(tmp_path, text, names):
    path = tmp_path / "budgets.toml"
    path.write_text(text)
    with pytest.raises(BudgetFileError) as refused:
        load_budgets(path)
    message = str(refused.value)
    assert names in message
    assert message.startswith(f"budgets file {path}: ")
    assert "\n" not in message


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(BudgetFileError, match="cannot be read"):
        load_budgets(tmp_path / "nope.toml")


def test_the_master_refuses_to_start_with_a_bad_file(tmp_path):
    path = tmp_path / "budgets.toml"
    path.write_text("[default]\ncost_per_day = -3\n")
    done = subprocess.run(
        [sys.executable, "-m", "rawp_app.cli", "master", "--state-dir", str(tmp_path / "m"),
         "--budgets", str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "default.cost_per_day must be zero or more" in lines[0]
    assert "Traceback" not in done.stderr


amounts = st.one_of(
    st.integers(min_value=0, max_value=10**12),
    st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False),
)


@given(st.dictionaries(st.sampled_from(KINDS), amounts))
def test_any_non_negative_amounts_are_taken_as_written(table):
    table = {
        k: (int(v) if k == "tokens_per_session" else v)
        for k, v in table.items()
        if k != "tokens_per_session" or float(v).is_integer()
    }
    rules = parse_budgets({"default": table, "nodes": {"n": table}})
    for kind in KINDS:
        expected = table.get(kind)
        assert getattr(rules.for_user("anyone"), kind) == expected
        assert getattr(rules.for_node("n"), kind) == expected


@given(
    st.sampled_from(KINDS),
    st.one_of(
        st.floats(max_value=-1e-9, allow_nan=False),
        st.integers(max_value=-1),
        st.text(max_size=5).filter(lambda s: s != "unlimited"),
        st.booleans(),
        st.lists(st.integers(), max_size=2),
    ),
)
def test_anything_else_is_refused(kind, value):
    with pytest.raises(BudgetFileError):
        parse_budgets({"users": {"u:1": {kind: value}}})
