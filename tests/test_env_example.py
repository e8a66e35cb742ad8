"""`.env.example` lists every environment variable the code reads (README contract)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VARIABLE = re.compile(r"\b((?:RAWP|DISCORD|SLACK)_[A-Z0-9_]+)\b")
# Variables only the test suite reads; they configure tests, not rawp.
TEST_ONLY = {"RAWP_TEST_POSTGRES_URL"}


def test_every_variable_is_documented():
    documented = set(re.findall(r"^([A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
    used = set()
    for package in ("rawp", "master", "client", "gateway", "adapters"):
        for path in (ROOT / package).rglob("*.py"):
            used |= set(VARIABLE.findall(path.read_text()))
    missing = sorted(used - documented - TEST_ONLY)
    assert not missing, f".env.example lacks {missing}"
    assert used, "the scan found no variable at all: the pattern is broken"
