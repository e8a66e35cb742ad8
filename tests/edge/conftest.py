"""Edge fixtures. `stack` runs one real master and one real client (processes, loopback,
`--dev`) for a whole test module; each test opens its own sessions on it."""

from __future__ import annotations

import pytest

from tests.edge.stack import start_stack
from tests.support import Processes

OWNER = "discord:1001"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    processes = Processes()
    made = None
    try:
        made = start_stack(processes, tmp_path_factory.mktemp("edge-stack"), OWNER)
        made.start_client()
        yield made
    finally:
        if made is not None:
            made.proxy.close()
        processes.close()
