"""The tree walk's child process: `python -m client.files.search.walk_process`.

Why a process: a walk makes a string for every name it sees and drops nearly all of them; in
the client's own heap what is kept (the table's names) ends up scattered among the freed
pages, which the allocator then cannot give back — a 1,000,000-file walk in a thread left
~220 bytes of RSS a file behind it, the table itself being ~14. In a child, the garbage goes
away with the process, and the client receives the compact table (table.py) as a few byte
strings. The walk's CPU is the child's, not the client's event loop's; a first walk of a large
tree is shared with forked helpers of the child (walk_parallel.py).

Protocol: stdin is one pickled request, stdout one pickled answer (both ends are this code).
  request ("build", ROOT, RESPECT_GITIGNORE)
    → ("table", PACKED_TABLE, DIRS_WITH_RULES, ARRANGED)   (ARRANGED: table.arrange)
  request ("rewalk", ROOT, RESPECT_GITIGNORE, START, PACKED_TABLE)
    → ("diff", NEW_PATHS, GONE_SLOTS, DIRS_WITH_RULES)
DIRS_WITH_RULES lists the directories whose `.gitignore` had rules: the client loads those
for the watcher's single-path checks.
"""

from __future__ import annotations

import pickle
import sys

from client.files.search.ignore import IgnoreRules
from client.files.search.table import PathTable, arrange, pack, unpack
from client.files.search.walk import walk
from client.files.search.walk_parallel import build_shared


def answer(request: tuple) -> tuple:
    kind, root, respect = request[0], request[1], request[2]
    rules = IgnoreRules(root, enabled=respect)
    if kind == "build":
        table, ruled = build_shared(root, rules)
        return ("table", pack(table), ruled, arrange(table))
    start, table = request[3], unpack(request[4])
    parent = start
    while parent:  # the rules above `start` decide what is below it
        parent = parent.rpartition("/")[0]
        rules.load_dir(parent)
    hidden = bool(start) and rules.ignored(start, True)
    listed = {} if hidden else walk(root, rules, start=start)
    fresh, stale = diff(table, start, listed)
    return ("diff", fresh, stale, rules.loaded())


def diff(table: PathTable, start: str, listed: dict[str, list[str]]) -> tuple[list[str], list[int]]:
    """The paths below `start` the table lacks, and the slots it holds that are gone."""
    stale: list[int] = []
    top = table.find_dir(start)
    paths = {top: start} if top is not None else {}
    for dir_id in table.subtree(top) if top is not None else ():
        here = paths[dir_id]
        for child in table.children(dir_id):
            name = table.names[table.dir_name[child]]
            paths[child] = here + "/" + name if here else name
        names = set(listed.get(here, ()))
        for slot in table.slots_in(dir_id):
            name = table.name(slot)
            if name in names:
                names.discard(name)  # known: not new
            else:
                stale.append(slot)
        listed[here] = list(names)
    fresh = [d + "/" + n if d else n for d, names in listed.items() for n in names]
    return fresh, stale


def main() -> int:
    request = pickle.load(sys.stdin.buffer)
    pickle.dump(answer(request), sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
