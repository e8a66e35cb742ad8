"""`observe_many` (an edge socket's batch of frames timed at once) counts as `observe` does."""

import random

from prometheus_client import CollectorRegistry, Histogram

from master.metrics import observe_many

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05)


def samples(registry: CollectorRegistry) -> list:
    return [
        (s.name, s.labels, round(s.value, 9))
        for metric in registry.collect()
        for s in metric.samples
        if not s.name.endswith("_created")
    ]


def test_a_batch_lands_in_the_buckets_one_by_one_would():
    rng = random.Random(20)
    # On the bounds, between them, past the last one, and zero.
    amounts = [*BUCKETS, 0.0, 7.5] + [rng.random() * 0.06 for _ in range(500)]
    one, many = CollectorRegistry(), CollectorRegistry()
    by_one = Histogram("latency", "x", buckets=BUCKETS, registry=one)
    by_batch = Histogram("latency", "x", buckets=BUCKETS, registry=many)
    for amount in amounts:
        by_one.observe(amount)
    observe_many(by_batch, amounts[:3])
    observe_many(by_batch, amounts[3:4])  # a batch of one
    observe_many(by_batch, amounts[4:])
    observe_many(by_batch, [])
    assert samples(many) == samples(one)
    assert samples(one)[-2] == ("latency_count", {}, float(len(amounts)))
