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


# Issue 29 §3: the gateway's rooms, and which other gateway modules each may import (a name
# covers its submodules). The top level (platform, settings, edge_client, edge_link, metrics,
# cli) is the seam they all stand on; a room imports only what its line names.
GATEWAY_ROOMS: dict[str, set[str]] = {
    "storage": {"gateway.platform"},
    "redaction": {"gateway.platform", "gateway.rendering.chunker"},
    "approvals": {
        "gateway.platform",
        "gateway.edge_client",
        "gateway.settings",
        "gateway.rendering.posting",
    },
    "rendering": {
        "gateway.platform",
        "gateway.approvals",
        "gateway.redaction",
        "gateway.storage",
        "gateway.replicas.platform_budget",
        "gateway.sessions.busy",
        "gateway.sessions.prompt",
    },
    "replicas": {"gateway.platform", "gateway.edge_client", "gateway.sessions.conversations"},
    "sessions": {
        "gateway.platform",
        "gateway.edge_client",
        "gateway.edge_link",
        "gateway.approvals",
        "gateway.redaction",
        "gateway.rendering",
        "gateway.replicas.cluster",
        "gateway.storage",
    },
}
MAX_TOP_LEVEL_MODULES = 15
MAX_GATEWAY_MODULE_LINES = 500


def gateway_imports(path: Path) -> set[str]:
    """The gateway modules `path` imports, as dotted names (`from gateway.x import y` → the
    module `gateway.x.y` when that is a module, else `gateway.x`)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("gateway."))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module != "gateway" and not node.module.startswith("gateway."):
                continue
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                module = ROOT / Path(*name.split("."))
                found.add(name if module.with_suffix(".py").is_file() else node.module)
    return found


def test_the_gateway_stands_in_rooms_of_readable_size():
    gateway = ROOT / "gateway"
    rooms = {p.name for p in gateway.iterdir() if (p / "__init__.py").is_file()}
    assert rooms == set(GATEWAY_ROOMS), "a gateway room came or went: update GATEWAY_ROOMS"
    for package in [gateway, *(gateway / room for room in rooms)]:
        modules = [p.name for p in package.glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= MAX_TOP_LEVEL_MODULES, f"{package.name}/ holds {len(modules)}"
    long = [
        f"{p.relative_to(ROOT)} ({n})"
        for p in sorted(gateway.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_GATEWAY_MODULE_LINES
    ]
    assert not long, f"split these gateway modules: {long}"


@pytest.mark.parametrize(
    "path",
    [p for room in GATEWAY_ROOMS for p in sorted((ROOT / "gateway" / room).glob("*.py"))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_a_gateway_room_imports_only_what_it_may(path):
    room = path.parent.name
    allowed = GATEWAY_ROOMS[room] | {f"gateway.{room}"}
    bad = {
        name
        for name in gateway_imports(path)
        if not any(name == a or name.startswith(a + ".") for a in allowed)
    }
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}: not in GATEWAY_ROOMS"


def test_the_room_check_sees_violations(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from gateway.rendering.render import SessionRenderer\nfrom gateway.sessions import busy\n"
        "import gateway.storage.store_db\nfrom rawp.clock import Clock\n"
    )
    assert gateway_imports(probe) == {
        "gateway.rendering.render",
        "gateway.sessions.busy",
        "gateway.storage.store_db",
    }
