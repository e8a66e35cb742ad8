"""The architecture's dependency direction, checked on the source (architecture.md, Layout).

rawp ← master, client, gateway ← adapters. master, client and gateway never import each other;
nothing imports adapters; the protocol core imports no server, socket or platform library.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("rawp", "master", "client", "gateway", "adapters")
SERVER_LIBS = {
    "quart",
    "hypercorn",
    "uvicorn",
    "websockets",
    "aiohttp",
    "sqlalchemy",
    "asyncpg",
    "aiosqlite",
    "socket",
    "asyncio",
    "discord",
    "slack_bolt",
    "slack_sdk",
    "redis",
}
PLATFORM_LIBS = {"discord", "slack_bolt", "slack_sdk"}

FORBIDDEN: dict[str, set[str]] = {
    "rawp": {"master", "client", "gateway", "adapters"} | SERVER_LIBS,
    "master": {"client", "gateway", "adapters"} | PLATFORM_LIBS,
    "client": {"master", "gateway", "adapters"} | PLATFORM_LIBS,
    "gateway": {"master", "client", "adapters"} | PLATFORM_LIBS,
    "adapters": {"master", "client"},
}
# `rawp up` runs all three tiers in one process: the one module allowed to wire them together.
WIRING = {Path("adapters/up.py")}
# The protocol core's one asyncio module: it owns tasks (issue 14 §6), it serves nothing.
TASK_OWNERSHIP = Path("rawp/tasks.py")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def sources():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield package, path


@pytest.mark.parametrize("package, path", list(sources()), ids=lambda v: str(v))
def test_dependency_direction(package, path):
    rel = path.relative_to(ROOT)
    if rel in WIRING:
        return
    forbidden = FORBIDDEN[package] - ({"asyncio"} if rel == TASK_OWNERSHIP else set())
    bad = imported_modules(path) & forbidden
    assert not bad, f"{rel} imports {sorted(bad)}, against the architecture's dependency direction"


def test_checker_sees_violations(tmp_path):
    """The check itself can fail: a file importing quart is reported as importing quart."""
    probe = tmp_path / "probe.py"
    probe.write_text("import quart.app\nfrom master.x import y\nfrom . import z\n")
    assert imported_modules(probe) == {"quart", "master"}


def test_top_level_layout():
    for name in ("pyproject.toml", ".env.example", "README.md", ".ci/run", "docs/protocol.md"):
        assert (ROOT / name).is_file(), name
    for name in (*PACKAGES, "tests", "docs", "bench"):
        assert (ROOT / name).is_dir(), name


def test_modules_stay_readable():
    """Style: one concern per module, well under 600 lines."""
    long = [
        f"{p.relative_to(ROOT)} ({n})"
        for _, p in sources()
        if (n := len(p.read_text().splitlines())) >= 600
    ]
    assert not long, f"split these modules: {long}"


def unowned_spawns(path: Path) -> list[int]:
    """Lines that start a task nobody owns (issue 14 §6): `asyncio.ensure_future`, or
    `create_task` on asyncio or an event loop — not on a TaskGroup, which awaits its own."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name, receiver = node.func.attr, node.func.value
        on_a_loop = (isinstance(receiver, ast.Name) and receiver.id in {"asyncio", "loop"}) or (
            isinstance(receiver, ast.Call) and "loop" in ast.unparse(receiver.func)
        )
        if name == "ensure_future" or (name == "create_task" and on_a_loop):
            found.append(node.lineno)
    return found


@pytest.mark.parametrize("package, path", list(sources()), ids=lambda v: str(v))
def test_every_task_has_an_owner(package, path):
    # Issue 28 §6: tasks are started through rawp.tasks (a TaskOwner or a race), or inside a
    # TaskGroup, so each is awaited and its failure seen; rawp/tasks.py is where that happens.
    rel = path.relative_to(ROOT)
    if rel == TASK_OWNERSHIP:
        return
    lines = unowned_spawns(path)
    assert not lines, f"{rel}: a task started outside an owner on line(s) {lines}"


def test_the_owner_check_sees_violations(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import asyncio\nasyncio.ensure_future(f())\nasyncio.create_task(f())\n"
        "asyncio.get_running_loop().create_task(f())\nloop.create_task(f())\n"
        "group.create_task(f())\n"
    )
    assert unowned_spawns(probe) == [2, 3, 4, 5]
