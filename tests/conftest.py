"""Fixtures every suite may use. Suites add their own in tests/<package>/conftest.py."""

from __future__ import annotations

import pytest

from tests.support import Processes


@pytest.fixture
def processes():
    """Real child processes, all ended (with their process groups) after the test."""
    procs = Processes()
    try:
        yield procs
    finally:
        procs.close()
