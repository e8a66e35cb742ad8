"""The architecture's dependency direction, checked on the source (architecture.md, Layout).

rawp ← runtime ← master, client, gateway ← adapters ← rawp_app. master, client and gateway
never import each other; only rawp_app imports adapters, and nothing imports rawp_app; the
protocol core and the runtime import no server, socket or platform library. A module loaded by
name (`importlib.import_module`, a `"module:Class"` table) counts as imported.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("rawp", "runtime", "master", "client", "gateway", "adapters", "rawp_app")
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
    "rawp": {"runtime", "master", "client", "gateway", "adapters", "rawp_app"} | SERVER_LIBS,
    "runtime": {"master", "client", "gateway", "adapters", "rawp_app"} | SERVER_LIBS,
    "master": {"client", "gateway", "adapters", "rawp_app"} | PLATFORM_LIBS,
    "client": {"master", "gateway", "adapters", "rawp_app"} | PLATFORM_LIBS,
    "gateway": {"master", "client", "adapters", "rawp_app"} | PLATFORM_LIBS,
    "adapters": {"master", "client", "rawp_app"},
    "rawp_app": set(),  # the composition roots: the command table, `rawp up`, launch, doctor
}
# The runtime's one asyncio module: it owns tasks (issue 14 §6), it serves nothing.
TASK_OWNERSHIP = Path("runtime/tasks.py")
# Loaded by name against the direction, each for a reason: `rawp gateway` lives with the gateway
# but its handler wires the platforms, which only rawp_app may (gateway/cli.py, WIRING_MODULE).
LATE_BOUND = {Path("gateway/cli.py"): {"rawp_app"}}

# A string naming one of our modules: `master.cli`, `master.settings:MasterSettings`.
MODULE_NAME = re.compile(r"([a-z_]+(?:\.[a-z_0-9]+)*)(?::[A-Za-z_][A-Za-z_0-9]*)?")


def names_a_module(text: str) -> str | None:
    """The module `text` names when it is a dotted path of one of our modules (a file or a
    package in this tree), else None: logger names and prose are not modules."""
    match = MODULE_NAME.fullmatch(text)
    if not match or match[1].split(".")[0] not in PACKAGES:
        return None
    path = ROOT / Path(*match[1].split("."))
    exists = path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()
    return match[1] if exists else None


def loaded_by_name(tree: ast.AST) -> set[str]:
    """Top-level packages a module loads by name: in a module that calls `import_module`, every
    string constant naming one of our modules (the call's argument, or a table it reads), except
    the one after `-m` in a command line, which starts a process rather than importing."""
    calls = (n for n in ast.walk(tree) if isinstance(n, ast.Call))
    if not any("import_module" in ast.unparse(call.func) for call in calls):
        return set()
    argv = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple):
            pairs = zip(node.elts, node.elts[1:], strict=False)
            argv |= {id(b) for a, b in pairs if isinstance(a, ast.Constant) and a.value == "-m"}
    return {
        name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in argv
        if (name := names_a_module(node.value))
    }


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = loaded_by_name(tree)
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
    forbidden = FORBIDDEN[package] - ({"asyncio"} if rel == TASK_OWNERSHIP else set())
    forbidden -= LATE_BOUND.get(rel, set())
    bad = imported_modules(path) & forbidden
    assert not bad, f"{rel} imports {sorted(bad)}, against the architecture's dependency direction"


def test_checker_sees_violations(tmp_path):
    """The check itself can fail: a file importing quart is reported as importing quart."""
    probe = tmp_path / "probe.py"
    probe.write_text("import quart.app\nfrom master.x import y\nfrom . import z\n")
    assert imported_modules(probe) == {"quart", "master"}


def test_checker_sees_modules_loaded_by_name(tmp_path):
    """A command table or a `"module:Class"` string read by `import_module` is an import; the
    module after `-m`, a logger's name and prose are not."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import importlib\n"
        "TABLE = {'up': ('rawp_app.up', 'run all'), 'docs': 'gateway.settings:GatewaySettings'}\n"
        "ARGV = ['python', '-m', 'client.cli']\n"
        "LOG = 'rawp.tasks'\n"
        "PROSE = 'see rawp_app.up'\n"
        "importlib.import_module(TABLE['up'][0])\n"
    )
    assert imported_modules(probe) == {"importlib", "rawp_app", "gateway"}
    probe.write_text("X = 'rawp_app.up'\n")  # no import_module: a plain string
    assert imported_modules(probe) == set()


# Issue 29: no package's top level over ~15 modules. The client's (24) is its own step of the
# issue, not yet taken; every other package is held to it.
TOP_LEVEL_PENDING = {"client"}


@pytest.mark.parametrize("package", [p for p in PACKAGES if p not in TOP_LEVEL_PENDING])
def test_no_package_top_level_is_crowded(package):
    modules = [p.name for p in (ROOT / package).glob("*.py") if p.name != "__init__.py"]
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, f"{package}/ holds {len(modules)}: {modules}"


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
    # Issue 28 §6: tasks are started through runtime.tasks (a TaskOwner or a race), or inside a
    # TaskGroup, so each is awaited and its failure seen; runtime/tasks.py is where that happens.
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
