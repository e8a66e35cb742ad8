"""master/gc_pauses.py: survivors of a full or middle collection are frozen (later walks skip
them), and a cycle that died frozen is freed after the periodic unfreeze. Run in a child
interpreter: the policy changes the whole process, which must not be pytest's."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROBE = textwrap.dedent(
    """
    import gc, weakref
    from master import gc_pauses

    now = [0.0]
    policy = gc_pauses.FreezeSurvivors(unfreeze_every=60, monotonic=lambda: now[0])
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

    young = Node()
    young.itself = young
    frozen_before, freezes_before = gc.get_freeze_count(), policy.freezes
    gc.collect(1)  # a collection of the middle generation freezes its survivors too
    print(
        "frozen after a middle collection:",
        gc.get_freeze_count() > frozen_before,
        policy.freezes - freezes_before,
    )
    gc.collect(0)  # a young one does not
    print("a young collection freezes nothing:", policy.freezes - freezes_before)
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
        "frozen after a middle collection: True 1",
        "a young collection freezes nothing: 1",
    ], done.stderr
