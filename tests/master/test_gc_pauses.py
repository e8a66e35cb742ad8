"""master/gc_pauses.py: survivors of a full collection are frozen (later walks skip them), and a
cycle that died frozen is freed after the periodic unfreeze. Run in a child interpreter: the
policy changes the whole process, which must not be pytest's."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROBE = textwrap.dedent(
    """
    import gc, weakref
    from master import gc_pauses

    now = [0.0]
    policy = gc_pauses.FreezeAfterFullCollections(unfreeze_every=60, monotonic=lambda: now[0])
    gc.callbacks.append(policy)

    class Node:
        pass

    node = Node()
    node.itself = node  # a cycle: only the collector can free it
    alive = weakref.ref(node)
    gc.collect()  # a full collection: the survivors, node included, are frozen
    print("frozen after a full collection:", gc.get_freeze_count() > 0, policy.freezes)
    del node
    gc.collect()
    print("dead cycle kept while frozen:", alive() is not None)
    now[0] = 61.0
    gc.collect()  # past the interval: this one unfreezes after it
    gc.collect()  # …and the next walks everything
    print("dead cycle freed after the unfreeze:", alive() is None, policy.unfreezes)
    """
)


def test_full_collections_freeze_survivors_and_the_periodic_unfreeze_frees_cycles():
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines() == [
        "frozen after a full collection: True 1",
        "dead cycle kept while frozen: True",
        "dead cycle freed after the unfreeze: True 1",
    ], done.stderr
