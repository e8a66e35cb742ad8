"""The first walk of a large tree, shared among processes (issue 35: the first index within
1.5× of `find -type f`).

A walk lists one directory at a time, and a monorepo has one directory for every two or three
files (the 1,000,000-file bench tree has 371,704): the walk is CPU-bound — Python's share of
each listing on top of the kernel's — and one core left it at 1.85× `find`. Listings of
different subtrees do not depend on one another, so other cores can take some. Rules:

1. The walk goes breadth first until `FRONTIER` directories wait to be listed. A small tree is
   done before that, in this process alone, as `walk.build` would walk it.
2. Then `processes - 1` forked helpers and this process share those directories through one
   pipe holding their numbers: each process reads one number at a time (a pipe read of 4
   bytes is atomic, so every number is taken exactly once) and walks the whole subtree below
   that directory before taking the next. A large subtree keeps one process busy while the
   others take the rest: no static split to go wrong.
3. A helper walks into a table of its own, each subtree it took under a placeholder child of
   its ROOT, and sends that table back through a pipe of its own with the `.gitignore`
   directories it loaded; this process grafts each placeholder onto the directory it stands
   for (`PathTable.graft`). A helper that fails fails the walk (the index reports it), never
   a table with a hole.
4. Forking is safe here because this runs in walk_process.py's child, which has one thread
   and nothing else open; the client itself never forks. Without `os.fork` (Windows), or with
   one core, it is `walk.build`.
"""

from __future__ import annotations

import os
import pickle
import struct
import traceback
from collections import deque
from collections.abc import Iterator

from client.files.search.ignore import IgnoreRules
from client.files.search.table import ROOT, PathTable, pack, unpack
from client.files.search.walk import Pending, extend, list_into

FRONTIER = 512  # rule 1: directories waiting before the walk is shared
MAX_PROCESSES = 4  # past this the listings contend in the kernel more than they gain
MAX_TOKENS = 8192  # rule 2: numbers in the pipe at most (4 bytes each: well within its 64 KiB)
_NUMBER = struct.Struct("=I")


def processes_here() -> int:
    if not hasattr(os, "fork"):
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_PROCESSES, cores or 1))


def build_shared(
    root: str, rules: IgnoreRules, *, processes: int | None = None, frontier: int = FRONTIER
) -> tuple[PathTable, list[str]]:
    """The table of every indexable file below `root`, and the directories whose `.gitignore`
    had rules, walked by up to `processes` processes (rules 1–3)."""
    processes = processes_here() if processes is None else processes
    table = PathTable()
    waiting = deque([("", ROOT, False)])
    while waiting and (processes == 1 or len(waiting) < frontier):  # rule 1
        waiting.extend(list_into(table, root, rules, *waiting.popleft()))
    if not waiting:
        return table, sorted(rules.loaded())
    shared = list(waiting)
    # One number per directory, or per run of `block` directories when there are more than
    # the pipe holds (one listing can add thousands): all written before a helper starts,
    # so a read of b"" means everything is taken.
    block = -(-len(shared) // MAX_TOKENS)
    work_out, work_in = os.pipe()
    os.write(work_in, b"".join(map(_NUMBER.pack, range(0, len(shared), block))))
    os.close(work_in)
    helpers = []
    for _ in range(processes - 1):
        try:
            helpers.append(_fork_helper(root, rules, shared, work_out, block))
        except OSError:  # no process to be had (a limit): this one takes the rest
            break
    for number in _taken(work_out, block, len(shared)):  # rule 2: this process's share
        extend(table, root, rules, [shared[number]])
    os.close(work_out)
    ruled = set(rules.loaded())
    for pid, results in helpers:
        sub, places, their_rules = _result(pid, results)
        table.graft(sub, {place: shared[number][1] for place, number in places.items()})
        ruled.update(their_rules)
    return table, sorted(ruled)


def _taken(work: int, block: int, count: int) -> Iterator[int]:
    """Rule 2: the numbers of the shared directories this process takes, a block at a time,
    until none is left."""
    while taken := os.read(work, _NUMBER.size):
        first = _NUMBER.unpack(taken)[0]
        yield from range(first, min(first + block, count))


def _fork_helper(
    root: str, rules: IgnoreRules, shared: Pending, work: int, block: int
) -> tuple[int, int]:
    results_out, results_in = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(results_out)
        os.close(results_in)
        raise
    if pid:
        os.close(results_in)
        return pid, results_out
    status = 1  # the helper (rule 3): never returns into the caller's code
    try:
        os.close(results_out)
        own = PathTable()
        places: dict[int, int] = {}  # placeholder → number of the shared directory
        for number in _taken(work, block, len(shared)):
            dir_rel, _, ruled = shared[number]
            place = own.add_dir(ROOT, "")
            places[place] = number
            extend(own, root, rules, [(dir_rel, place, ruled)])
        with os.fdopen(results_in, "wb") as out:
            pickle.dump((pack(own), places, rules.loaded()), out, pickle.HIGHEST_PROTOCOL)
        status = 0
    except BaseException:
        traceback.print_exc()  # to walk_process's stderr, which the index quotes
    finally:
        os._exit(status)


def _result(pid: int, results: int) -> tuple[PathTable, dict[int, int], list[str]]:
    with os.fdopen(results, "rb") as answer:
        data = answer.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        raise RuntimeError(f"a walk helper failed (wait status {status})")
    packed, places, ruled = pickle.loads(data)
    return unpack(packed), places, ruled
