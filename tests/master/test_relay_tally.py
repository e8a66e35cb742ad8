"""`RelayTally` (master.metrics): the relay's counts kept as plain numbers scrape exactly as
prometheus_client's own Counter and Histogram would, fed the same frames one by one or in an
edge socket's batches."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram

from master.metrics import LATENCY_BUCKETS, RelayTally


def samples(registry: CollectorRegistry) -> list:
    return sorted(
        (s.name, tuple(sorted(s.labels.items())), round(s.value, 9))
        for metric in registry.collect()
        for s in metric.samples
        if not s.name.endswith("_created")
    )


def reference(amounts: list[float], to_edge: int, to_client: int) -> CollectorRegistry:
    registry = CollectorRegistry()
    relayed = Counter("rawp_master_frames_relayed_total", "x", ["direction"], registry=registry)
    latency = Histogram(
        "rawp_master_relay_latency_seconds", "x", buckets=LATENCY_BUCKETS, registry=registry
    )
    relayed.labels("to_edge").inc(to_edge)
    relayed.labels("to_client").inc(to_client)
    for amount in amounts:
        latency.observe(amount)
    return registry


# On the bounds, between them, past the last one, and zero.
AMOUNT = st.one_of(st.sampled_from([*LATENCY_BUCKETS, 0.0, 7.5]), st.floats(0, 10, allow_nan=False))


@settings(max_examples=200, deadline=None)
@given(
    amounts=st.lists(AMOUNT, max_size=60),
    cuts=st.lists(st.integers(0, 60), max_size=5),
    to_client=st.integers(0, 1000),
)
def test_the_tally_scrapes_as_prometheus_clients_own_metrics(amounts, cuts, to_client):
    tally = RelayTally()
    registry = CollectorRegistry()
    registry.register(tally)
    points = sorted({0, len(amounts), *(c % (len(amounts) + 1) for c in cuts)})
    for start, end in itertools.pairwise(points):
        batch = amounts[start:end]
        if len(batch) == 1:
            tally.observe(batch[0])  # a frame written at once (edge_socket rule 6)
        else:
            tally.observe_many(batch)  # a batch (rule 5)
        tally.to_edge += len(batch)
    tally.to_client += to_client
    expected = samples(reference(amounts, len(amounts), to_client))
    assert samples(registry) == expected
    count = next(s for s in expected if s[0] == "rawp_master_relay_latency_seconds_count")
    assert count[2] == len(amounts)
