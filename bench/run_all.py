"""Run every benchmark and write docs/benchmarks.md: `.venv/bin/python bench/run_all.py`.

`--quick` skips the file-search benchmark (it builds trees of a million files and takes
minutes) and keeps the figures of its last run from the current docs/benchmarks.md;
`--file-search-only` runs just that one and rewrites its figures in place; `--files` sets its
tree sizes (`--files 1000000,100000`). Each benchmark starts
and stops its own processes; this runner only gathers the figures and the machine description.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pickle
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT))

import fanout  # noqa: E402  (bench/ is not a package: its modules are found on sys.path)
import file_search  # noqa: E402
import plots  # noqa: E402
import relay  # noqa: E402
import render  # noqa: E402
import replicas  # noqa: E402
import scale  # noqa: E402
import search_relay  # noqa: E402
import startup  # noqa: E402

# bench/gateway.py under another name: `gateway` is the package it measures.
_spec = importlib.util.spec_from_file_location("gateway_bench", BENCH / "gateway.py")
gateway_bench = sys.modules["gateway_bench"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gateway_bench)

# The gateway benchmark in a process of its own (`gateway_figures`), its figures pickled to a file.
GATEWAY_CHILD = """\
import pickle, sys
sys.path.insert(0, sys.argv[1])
import run_all
figures = run_all.gateway_bench.run()
with open(sys.argv[2], "wb") as out:
    pickle.dump(figures, out)
"""

DOC = ROOT / "docs" / "benchmarks.md"
SCALE_PLOT = ROOT / "docs" / "bench" / "scale-rss.png"
FILE_SEARCH_START = "<!-- file-search figures: start -->"
FILE_SEARCH_END = "<!-- file-search figures: end -->"
FILE_SEARCH_PLOT = ROOT / "docs" / "bench" / "file-search-cdf.png"

# Where to look when a target is missed this run; printed only for a missed target. The causes
# found and fixed so far are in FIXED, printed every run.
CAUSES = {
    "render": """\
**Cause (cProfile over `bench/render.py`'s `slack`, 2026-12-03 23:30 UTC):** about 60 % of the
Slack path is the mrkdwn conversion (`adapters/slack/mrkdwn.py`: ~640 regex substitutions per
100 KB answer, in `_prose` and `_styled`), and about 35 % is the chunker. The path costs 30–39×
a plain `split` of the text. This machine's speed for that split varied between 0.10 and
0.20 ms across today's runs, so the worst repetition landed between 3.5 and 7.4 ms. Discord
stays near 1 ms. Next: one combined pattern per prose run instead of one substitution per
style. To look again: cProfile over `discord` and `slack`; the chunker
(`gateway/rendering/chunker.py`) should scan each line once.""",
    "relay": """\
Throughput: the CPU rows say which process pays per frame. Profile the client or the master
with `py-spy record --pid <pid>` while `bench/relay.py` floods: the client's frame building
(`Session._fit`, `rawp.frames.encode_frame`), its stdout reading (`client/agents/script.py`)
and its socket writes (`client/api/socket.py`), the master's pump (`master/edge/links/dataplane.py`)
and edge writes (`master/edge/api/wire_batch.py`). On two cores the master path shares the CPUs
among four busy processes where the direct path has three. Latency: compare the p99 rows; the
master path adds a second WebSocket hop and a second Python event loop, whose scheduling
jitter shows in the tail on a shared machine.""",
    "scale": """\
Memory: `bench/scale.py --trace-memory FILE` lists the master's largest allocation sites.
Latency: a timeline of latency per quarter second tells a stall of every session at once (the
collector, a blocking call in the pump) from steady slowness; compare a run with the master's
collector off (`gc.disable()` in a `sitecustomize.py` on `PYTHONPATH`).""",
    "scale10k": """\
**Cause of the p99 (measured, 2026-12-06):** in the every-session shape the frames sent in the
first second or two of streaming — while 9,800 prompts reach the master within one second and
every stream's first frames start — are 4–6 % of all, and the master, saturated then, delays
them by 250–460 ms; with more than 1 % of the frames there, they are the p99. The row "p99 of
the frames sent once every session streams" leaves them out (35.4 and 48.2 ms in the
morning's two runs).
On the machine of 2026-12-05 the same code measured 9.6–47.4 ms over all frames; this one runs
the many-socket shape about 1.6× slower (the load generator's own CPU too), the one-socket flood
as fast. A prompt costs the master about 100 µs (py-spy over the start-up: a fifth of the
samples, ~1 s of CPU for 9,800 prompts): uvicorn's parse and queue, Quart's task and queue, a
wake-up of each, `DataPlane.from_edge`, websockets' send to the client link. Next: take an edge
frame in its socket's reader, as the link reader takes client frames
(`master/edge/links/link_reader.py` rule 7).
Edge sockets: the master holds two sockets per session (the edge's and its link to the
client), so 10,000 sessions with an edge each need over 20,000 descriptors. Where the hard
limit (`ulimit -Hn`) is lower, the bench attaches as many edges as fit and says so. Memory:
`BENCH_TRACE_DEPTH=40 bench/scale.py --sessions 1000 --trace-memory FILE` charges what the
sessions allocate to lines of the project's code.""",
    "cpu35": """\
**Why (measured):** the flood is one session's frames, read many to a socket read and written
many to a socket write. At scale each frame is its own: a wake-up of the master's event loop,
a read from the session's client socket, a write to its edge socket, and the kernel's work for
each. The floor row of each run above is a bare asyncio forwarder doing only that, in the
same shape: on this two-core machine it alone cost 15–31 µs a message on asyncio (12.4 on
uvloop) in the runs of 2026-12-06 — past twice the flood's 5.7–6.3 µs before any WebSocket,
parsing or relaying is done. uvloop took 17 % off that floor and 5 % off the master's figure
(measured, not adopted). docs/benchmarks.md ("Not measured yet", issue 35) has the measurements.""",
    "gateway": """\
Calls: the by-method table names the extra call; ⏳ goes on after 2 s and Discord's typing
repeats every 4 s, so on a loaded machine a "short" turn that ran longer costs more (the
test tests/gateway/test_calls_per_turn.py counts on a fake clock). Delay: compare with the
bare post's latency in the same run; a gap means work at turn end before the post
(`RenderCore.end_turn` and the driver performing its operations).""",
    "file-search": """\
**Causes:**
- **The real walk** stats every file. `find -type f` over the same tree, printed beside the
  build, is the file system's own floor and takes more than 5 s on this machine.
  docs/file-search.md ("Benchmark") says where the rest of the time goes.
- **Memory** is about 370 bytes per file: the path, a dict slot, frizbee's own copy of the
  path, and the packed arrays (stamps, sizes).
- **The 1,000,000-file p99.** With 66 queries, the p99 is the worst query but one. The worst
  queries are the broadest ones (39 of 66 are answered without `total_count`). Each takes
  ~115 ms of CPU spread over frizbee's threads on both cores, so its wall time depends on
  whether the other core is free: 50.5 ms in the quiet run at 19:40 UTC, 70.0 ms in this one.
- **The 100,000-file p50 under load.** The median query costs ~12 ms of CPU over frizbee's
  threads. A busy-loop process takes one of the two cores, so the median lands at 9.9–10.7 ms
  from run to run.

Next: stat only the ≤ 50 answers (about 4 s and 48 MB less at a million files), and give the
broad queries one thread's pass over the first chunk.""",
    "startup": """\
`rawp up` imports the master, client and gateway apps (Quart, SQLAlchemy, pydantic models) in
one process; compare its figure with `import quart` above and profile with
`python -X importtime -m rawp_app.cli up …`.""",
}

# What earlier runs missed, the cause found by profiling, and the fix in the code (issue 7).
FIXED = """\
- **Rendering for Slack, 50–97 ms → ~2 ms.** `adapters/slack/mrkdwn._block_texts` re-split a
  piece that escaping had pushed over 3,000 characters and then checked the sub-pieces against
  the *smaller* split size, cutting a code-heavy answer into 411 blocks of ~270 characters.
  Now the answer is converted to mrkdwn once and cut once at 3,000, measured as Slack counts
  (41 blocks for this answer). **Discord, 4–8 ms → ~0.4 ms:** `gateway/rendering/chunker.py` ran its
  per-line fence check ~3.8 times per line; it now finds the only lines that can open or close
  a fence with one regex search per message, and `_choose_end` returns the fence state at its
  cut, so no text is scanned twice. The chunks are identical to the old ones (compared on
  thousands of generated inputs).
- **Master memory at 1,000 sessions, ~310 MB → ~187 MB.** tracemalloc showed 256 MiB of zlib
  state in `wsproto` — permessage-deflate, which hypercorn accepts whenever an edge offers it
  (browsers and `websockets` do) with no setting to refuse. The master now runs under uvicorn
  with `ws_per_message_deflate=False` (`master/server.py`); a test checks the extension is
  declined.
- **p99 frame latency at 1,000 sessions, 17–350 ms from run to run → 13–19 ms.** A latency
  timeline showed one 300–400 ms stall of every session at once; with the master's collector
  off the p99 was 15 ms. CPython's full collections walked ~450,000 live objects (100–400 ms
  each) and freed almost nothing. The master now freezes the survivors of each full collection
  and unfreezes every ten minutes (`master/gc_pauses.py`): full collections take ~50 ms flat.
  Also: the pump no longer waits for the database write of a session's last activity.
- **A master with a Redis URL relayed at 46 % of one without** (issue 9's benchmark, py-spy:
  40 % of its time in redis-py, per frame). The Redis relay now writes the frames of a session
  queued meanwhile as one script call and one published message: 88 % in the run after.
- **The client at 13–38 % of the wire → over half of it** (issue 20; py-spy on the client
  during a flood). Per frame the client built a `Frame` model whose validators parsed the UUID
  and timestamp it had just made, a `uuid.UUID` object and a `datetime`, read stdout a line at
  a time and `json.loads` decoded text, and sent through Quart and hypercorn with a yield, an
  ASGI message and a socket write each. Now the envelope is written directly around the
  payload's one validation and dump (`rawp.frames.encode_frame`, the same bytes), ids and
  timestamps are cheap, stdout is read by chunk with orjson, and frames that queue are framed
  one by one and written together (`client/api/socket.py`; one text frame per event as
  before). The master's edge sockets write queued frames together the same way
  (`master/edge/api/wire_batch.py`).
- **The master at 61–78 % of direct → above 80 %** (issue 20; py-spy on the master during a
  flood). websockets parses each incoming frame through a chain of generators
  (`Protocol.parse` → `Frame.parse` → `read_exact`): a third of the master's time per relayed
  frame. Framing each edge frame through websockets' `send_text` cost another tenth. The
  master's link to a client now parses whole unmasked data frames in one pass and gives every
  other frame to websockets whole (`master/edge/links/link_reader.py`, checked against websockets'
  own reader on the same bytes, cut anywhere). Where no extension was negotiated, the edge
  writer puts each frame's two-to-ten-byte header in front itself (`wire_batch.py`). Master CPU
  per relayed frame went from 14.0 to 10.5 µs."""

# Where an idle session's memory goes, and what issue 20 §3 shrank: tracemalloc runs are slow
# (and change the RSS they measure), so they are not part of this runner; the text says which
# command and run it comes from.
SCALE_MEMORY = """\
**Where an idle session's memory goes.** `bench/scale.py --sessions 1000 --trace-memory FILE`
(tracemalloc from the master's start, one frame per allocation; the growth from the moment the
edge user is paired to 1,000 sessions open; run 2026-12-03 18:13 UTC, load average 15–18, the
code before the shrinks at 5edd48f and after them on this branch, h/perfscale, in the same
minutes). A
session holds two sockets in the master — the edge's (uvicorn → Quart → `master.edge.api.ws`) and
the link to the client (`websockets` client) — and most of its ~80 KB is those two stacks'
objects, a few hundred bytes each: asyncio Events and Queues (an empty `asyncio.Queue` is
3.3 KB: three deques and an Event's deque), tasks, and the handshake headers uvicorn and
`websockets` keep for the life of a connection.

Before (traced heap at 1,000 sessions: 135.6 MiB):

| # | allocation site | grown by | objects | per session |
|---|---|---|---|---|
| 1 | `asyncio/locks.py:168` (an Event's deque) | 6.5 MiB | 18,016 | 6,846 B |
| 2 | `websockets/datastructures.py:196` (handshake headers) | 2.4 MiB | 44,000 | 2,518 B |
| 3 | `asyncio/base_events.py:436` (`create_task`) | 2.3 MiB | 23,002 | 2,459 B |
| 4 | `websockets/datastructures.py:138` (handshake headers) | 2.2 MiB | 41,000 | 2,357 B |
| 5 | `asyncio/queues.py:48` (a Queue's deque) | 2.2 MiB | 6,000 | 2,280 B |
| 6 | `asyncio/queues.py:39` (a Queue's deque) | 2.2 MiB | 6,000 | 2,280 B |
| 7 | `asyncio/queues.py:37` (a Queue's deque) | 2.2 MiB | 6,000 | 2,280 B |
| 8 | `uvicorn/…/websockets_sansio_impl.py:114` (the server protocol) | 1.5 MiB | 2,000 | 1,584 B |
| 9 | `asyncio/base_events.py:427` (a task's coroutine) | 1.5 MiB | 10,967 | 1,578 B |
| 10 | `uvicorn/…/websockets_sansio_impl.py:237` (request headers) | 1.3 MiB | 26,000 | 1,349 B |

After (traced heap at 1,000 sessions: 128.5 MiB, −7.1 MiB: −7.3 KB per session):

| # | allocation site | grown by | objects | per session |
|---|---|---|---|---|
| 1 | `asyncio/locks.py:168` (an Event's deque) | 4.3 MiB | 11,992 | 4,557 B |
| 2 | `websockets/datastructures.py:196` (handshake headers) | 2.4 MiB | 44,000 | 2,518 B |
| 3 | `websockets/datastructures.py:138` (handshake headers) | 2.2 MiB | 41,000 | 2,357 B |
| 4 | `asyncio/base_events.py:436` (`create_task`) | 1.7 MiB | 17,005 | 1,830 B |
| 5 | `uvicorn/…/websockets_sansio_impl.py:114` (the server protocol) | 1.5 MiB | 2,000 | 1,584 B |
| 6 | `asyncio/queues.py:48` (a Queue's deque) | 1.4 MiB | 4,000 | 1,520 B |
| 7 | `asyncio/queues.py:39` (a Queue's deque) | 1.4 MiB | 4,000 | 1,520 B |
| 8 | `asyncio/queues.py:37` (a Queue's deque) | 1.4 MiB | 4,000 | 1,520 B |
| 9 | `uvicorn/…/websockets_sansio_impl.py:237` (request headers) | 1.3 MiB | 26,000 | 1,349 B |
| 10 | `asyncio/base_events.py:427` (a task's coroutine) | 1.2 MiB | 8,894 | 1,280 B |

**What was shrunk** (issue 20 §3; every change keeps its module's tests green):

- *A Queue per edge socket* (`master/edge/relay/edge_socket.py`): a bare deque and a future
  while the sender waits, instead of an `asyncio.Queue` for the socket's life (3.3 KB).
- *A task per edge socket waiting for its kick*: the kick now cancels the sender, which ends
  the socket's race; the task, its Event and the Event's deque are gone (~2.5 KB).
- *An Event per race* (`runtime/tasks.race`, one per edge socket): a future (~0.8 KB).
- *A keepalive task per client link* (websockets' `ping_interval`): one task pings every link,
  a slice a second (`master/edge/links/link_pings.py`; ~1.5 KB per session, and 10,000 timers
  fewer).
- Together: Events per session 9 → 6, Queues 3 → 2, tasks per session 2 fewer; the traced
  heap −7.3 KB per session; RSS per idle session at 10,000 ~89–91 KB (read off the run before,
  which stopped at 9,475 sessions when its edge token expired) → 78 KB.
- *Not per-session memory, but found on the way*: issuing a ticket read the whole ticket table
  to delete expired ones, so opening N sessions was O(N²) — the run before slowed from 25 to a
  few sessions a second near 9,000; the sweep now runs at most once a minute
  (`master/edge/access/tickets.py`): 10,000 sessions
  opened in 331 s, where the run before had opened 9,475 in 15 minutes.
- *Left*: the rest is the server stack's per connection — uvicorn's protocol, Queue and
  handshake headers, Quart's websocket task pair, Queue, request context and werkzeug
  headers, the `websockets` client connection. With 40 frames per allocation
  (`BENCH_TRACE_DEPTH=40`, 300 sessions, before the shrinks) 47 KB of a session's traced 80 KB
  had no line of the project's code behind it (uvicorn and Quart serving the edge socket) and
  7 KB came from opening the client link (`master/services/pinning.py`). Shrinking that means
  serving the edge socket below Quart (a bare ASGI route) and not keeping handshake headers,
  which is more than this issue's scope. No per-session buffer is preallocated (the replay
  deque, the dedupe window and the pending queue grow on use), no per-session logger exists,
  and no socket compresses (the master declines permessage-deflate)."""

NOT_MEASURED = """\
- Nothing from issue 7's list; but every figure here is one run on a shared two-core machine.
- The collector policy's long pause every ten minutes (`master/gc_pauses.py`) falls outside
  the scale benchmark's 10 s window; a run of an hour would show it in the p99.9.
- **Issue 35 (measured by hand, not yet by `run_all`).** Earlier this round: bookkeeping
  is written in rounds (`master/edge/usage/bookkeeping.py`; tests/edge/test_bookkeeping.py
  counts 1,000 sessions' activity plus 300 usage frames in at most 4 transactions, where each
  was one); the replay is bounded by bytes per session and for the master (`replay_ring.py`,
  256 KiB and 128 MiB then, 32 MiB now; 304 B of bookkeeping a frame measured with
  tracemalloc); a stop closes every link at once and detaches every session in one transaction.
- **Issue 35 on a quiet machine, 2026-12-05 09:29–09:39 UTC** (commit e6dcf05, load average
  1.8–3.6, nothing else running; `bench/relay.py`, `bench/scale.py --sessions 10000` in both
  shapes, `bench/file_search.py --files 1000000`):
  - *Client CPU per relayed frame:* 6.6 µs against the bare `websockets` sender's 4.7 µs in the
    same run, **1.40×** (target ≤ 1.5×: met; it was 2.12× at 9.1 µs for `main` before this
    round's changes, measured side by side under the same load). Direct is 100 % of the wire,
    the master path 82 % of direct, p99 added at 1,000 frames/s +0.71 ms: all still met. What
    went: a `getrandom` call per `message_id` (ids now come 256 to one call), pydantic's
    Python-level wrappers and a dict for orjson (pydantic writes the payload's JSON into the
    envelope), an `asyncio.Queue` per outbox (a deque with one waiter), an `OrderedDict`
    insert and pop per evicted buffer frame (a bounded deque), a closure per frame. The flood
    is now 100,000 frames a turn: the kernel counts CPU in 10 ms ticks, 0.5 µs a frame at
    20,000. uvloop was measured earlier this round and not adopted (the client was no faster
    with it: 16–19 µs against 14–15 µs in interleaved runs).
  - *10,000 sessions, 10 % at 20 frames/s:* p50 / p99 920 / 1,485 ms (target ≤ 50 ms:
    **missed**), 0 lost of 400,000, 19,144 of 20,000 frames/s delivered in the window, 9,800
    edge sockets (the descriptor limit is 20,000: two per session in the master), RSS 864 MB
    open and 1,000 MB at the streaming peak, SIGTERM → exit **6.2 s** with every session live
    (target ≤ 10 s: met), all 9,800 edges closed with 1001/1012. Master CPU 61 % of a core;
    the load generator 54 % (fake client) + 74 % (edges): 189 % of the two cores. The queue is
    on the cores, not in the master: the generator alone takes more than one core.
  - *10,000 sessions, every one at 1 frame/s:* p50 / p99 613 / 2,122 ms (**missed**), 0 lost
    of 196,000, 9,276 of 9,800 frames/s, RSS 885 MB open and 1,007 MB at the peak, stop 5.9 s
    (met). Master CPU 64 % of a core for 9,276 frames/s: **69 µs a frame**, against 9.7 µs in
    the flood of the same commit (target within 2×: **missed**). At a frame a second per session
    every frame is its own socket read, wake-up and write; this round an idle edge's frame is
    written by `offer` itself without waking the socket's sender task (rule 6 of
    `edge_socket.py`; 16 % → 14 % of a core at 2,000 sessions under load). The next costs, from
    py-spy at 2,000 sessions: the write syscall per frame (20 %), websockets' reader handing
    each link frame through its `Assembler` queue to the pump task (15 %), and the link pings.
  - *RSS after each session relayed more than its budget:* not run; at 10,000 sessions that is
    over 2.5 GB of frames through the master (256 KiB each) and would take the generator
    ~20 minutes. The bound itself is enforced and tested (`tests/edge/test_replay_budget.py`);
    idle sessions cost 78–80 KB each, so 10,000 of them plus the 128 MiB master budget of then
    come to about 1.0 GB (measured later this day: see below).
  - *File search, 1,000,000 files:* query p50 / p99 **7.6 / 36.5 ms** (targets 20 / 60 ms: both
    met; CPU p99 59 ms on two threads), 49× ahead of fzf, under one busy loop p50 9.4 ms, the
    real walk 143 B of RSS a file (met). The first index took **1.85×** `find -type f` (6.14 s
    against 3.32 s; missed then): on this warm, quiet tree `find` is CPU-bound in C and our
    walk was Python's `scandir` loop on one core. Built in memory from a path list (the
    benchmark's own row, not a product path) it costs 252 B a file.
  - *File search, first index, 2026-12-05 12:00–12:10 UTC* (commit 899ba76, quiet): the first
    walk of a large tree is now shared among forked helpers of the walk child, one per core
    (`client/files/search/walk_parallel.py`): **1.04×** `find -type f` (3.93 s against 3.77 s)
    and, in `run_all --file-search-only` right after, **1.11×** (4.05 / 3.64 s; target ≤ 1.5×:
    met), 148 and 131 B of RSS a file, query p50 / p99 7.7 / 36.1 and 7.6 / 36.4 ms, 47–51×
    ahead of fzf. The file-search section above is that second run.
  - *10,000 sessions again, 2026-12-05 12:10–12:55 UTC* (quiet machine; `bench/scale.py` with
    a lighter load generator: frames filled into a template, one read deadline per edge, its
    collector frozen and off once the sessions are open — a gc callback had shown the
    generator's own full collections pausing it for up to 635 ms — and sessions at random
    phases; `--aligned` keeps the old in-step shape). *10 % at 20 frames/s:* p50 / p99
    **48 / 110 ms** (was 920 / 1,485; target 50 ms: **missed**), 0 lost of 400,000, RSS peak
    997 MB, stop 6.1 s, 9,800 edges all closed 1001/1012; the generator now 41 % + 49 % of a
    core, the master **93 %** of one for 19,565 frames/s (47 µs a frame): the master is the
    bottleneck now, not the cores. *Every session at 1 frame/s:* p50 / p99 **1.3 / 446 ms**
    (was 613 / 2,122; **missed**), 0 lost of 196,000, RSS peak 987 MB, stop 5.4 s, the master
    75 % of a core for 9,382 frames/s (**80 µs a frame** against the flood's 9.7: **missed**).
    In step (`--aligned`, before the collector change) the same shape had p99 768 ms: each
    period began with 9,800 frames at once, ~0.7 s of the master's work. What the slowest
    seconds (`--latency-trace`) and a gc callback in the master show: the first 3 s, while
    every stream starts, p99 ~500 ms; after that 130–180 ms spikes, with the master's full
    collections taking ~100 ms every ~3 s and its young collections 25–40 ms every ~0.4 s
    (wall time, on two shared cores). The link pings went in slices of 500 each second,
    ~70 ms of relay held up (py-spy: 6.8 % of the master's CPU); now 50 each 0.1 s. Next:
    the master's collector during streaming (what each frame leaves tracked), a Ping without
    a task of its own, and the per-frame wake-ups listed above.
    One more, after the replay ring stopped leaving a tracked tuple per kept frame
    (`replay_ring.py` rule 5), same shape, one run: p50 / p99 0.9 / 366 ms (446 before, one
    run each: not told apart from noise), 78 µs a frame; the 115–150 ms spikes after the
    first seconds remain.
  - *uvloop in the master, 2026-12-05 14:39–14:46 UTC* (commit 0f2eca8 for both; every session
    at 1 frame/s, one run each, back to back, nothing else running; the master run on uvloop by
    a local change that is not kept): asyncio p50 / p99 **81.6 / 760 ms**, 99 µs a frame, 91 %
    of a core, stop 5.7 s; uvloop **24.2 / 631 ms**, 91 µs a frame, 84 %, stop 4.9 s; 0 lost of
    196,000 in both. Not adopted: 8 % less CPU a frame is inside what this machine varies by
    (the same asyncio master measured 78–80 µs in the runs above), and neither is near the
    target; the cost is the master's own work per frame, not the loop's wake-ups.
- **Issue 35, 2026-12-05 20:00–22:00 UTC** (quiet machine, nothing else running; the
  commits from 'master: a client frame is relayed by the link's socket reader' on):
  - *What changed, each found with py-spy, a gc callback and a loop-lag probe in the master.*
    (1) A client frame is relayed by the link's socket reader in the turn of the event loop
    that read it (`link_reader.py` rule 7, `client_link.py` rule 9), where it went through
    websockets' queue, a future and a wake-up of the link's task, which then left a new chain
    of coroutines waiting for the next frame; a census of the master's old generation showed
    those chains (~10 objects a session, renewed every frame) as most of what the full
    collections walked. (2) The relay's counts are plain numbers exported when scraped
    (`RelayTally`; prometheus_client's locked `inc`, three a frame, was ~10 % of the
    samples). (3) The bookkeeping round writes `last_activity_at` one statement per second of
    marks (`WHERE id IN (…)`), not one step per session: 10,000 steps a round, each a hand-over
    of the GIL between aiosqlite's thread and the loop, had made rounds of 150–240 ms with
    30–65 ms of loop lag. (4) Survivors of a middle collection are frozen as those of a full
    one (`gc_pauses.py`): after a burst of prompts the next full collection had walked them
    for 111–123 ms. (5) Edge sockets pause reading once 16 messages wait, not after each one
    (`ws_protocol.py`): uvicorn's pause and resume, an unregister and a register on the
    selector per edge frame, was ~30 % of the master's work on a burst of prompts.
  - *The bench* measures the master's CPU with every session open and silent (1.6–1.9 % of a
    core at 10,000: the CPU per frame is the frames'), sends each session's prompt at a random
    moment of the first period (`--prompts-at-once` keeps the old burst), pads frames with
    `--frame-bytes`, and counts the edge sockets that fit the descriptor limit as all.
  - *10,000 sessions, every one at 1 frame/s*, after all five: p50 / p99 **0.4 / 9.6**,
    **0.4 / 14.3** and **0.4 / 47.4 ms** (target ≤ 50 ms: **met**, the last narrowly; was
    1.3 / 366–446; a fourth run started while the suite's Docker containers were still
    stopping gave 116.1 ms), 0 lost of 196,000 each, 0 repeated (counted from the last run on:
    a frame whose number is not past its stream's last is counted, not received),
    **36 µs a frame** (was 78–80), the master 35 % of a core, RSS peak 926 MB, SIGTERM → exit
    2.9 s, 9,800 edge sockets (the descriptor limit of 20,000: two per session in the
    master), all closed 1001/1012; generator 20 % + 23 %. With every prompt at once: p99
    **26.8 ms** (45.6–120.9 ms after (1)–(4) alone); its first second, 9,800 prompts reaching
    the master within a fraction of a second, still has a p99 of 123 ms; the first second is
    where every run's worst frames are (p99 43–156 ms in it, 2–27 ms in the seconds after).
  - *10,000 sessions, 10 % at 20 frames/s:* p50 / p99 **0.5 / 1.9**, **0.5 / 5.4** (after (1))
    and **0.6 / 6.1**, **0.5 / 3.4 ms** (after all five; was 48 / 110: **met**), 0 lost of
    200,000 each, 0 repeated (the last run),
    22–27 µs a frame (was 47), the master 42–53 % of a core, RSS peak 911–991 MB, stop
    3.0–3.3 s.
  - *Master CPU per frame against the flood's:* `bench/relay.py` the same evening: the master's
    flood 5.5 and **6.7 µs** a frame (was 9.7; the reader relays there too), the relay ratios
    met (direct 99–105 % of the wire, master 82–84 % of direct, p99 added +0.05–0.06 ms),
    client 1.40–1.46× the bare sender. Against 2× that (11–13 µs): 22–27 µs at 20 frames/s
    and 36 µs at 1 frame/s: **missed**. The floor (`bench/forwarder.py`, a bare asyncio
    forwarder: `data_received` writes to the paired socket, no WebSocket, no parsing) cost
    14.3 µs a message at 9,000 sockets × 1/s and 16.1 µs at 1,000 × 20/s in one run, 12.2 and
    7.7 µs in another an hour before: at a frame a second per session every frame is its own
    wake-up, read and write, and even that floor is above 2× the flood's. The master is about
    2.5× the floor at 1 frame/s and 2–3× at 20.
  - *RSS after each session relayed more than its budget* (`--frame-bytes 8192 --seconds
    40`: 320 KiB a session against the 256 KiB budget): 1,000 sessions peaked at 439 MB with
    the master budget at 128 MiB — RSS grew by about twice what was kept (the allocator's
    share of 8 KB frames kept and let go) — 313 MB at 64 MiB and **250 MB at 32 MiB**, now
    the default (`RAWP_EDGE_REPLAY_TOTAL_BYTES`, docs/operations-master.md); 10,000 sessions
    (9,800 streaming, 392,000 frames, 0 lost) **952 MB** (≤ 1 GB: met; before (3)–(5)).
- **Issue 35 on a new machine of the same kind, 2026-12-06 10:05–11:15 UTC** (quiet; commit
  b054c8c, the same as the evening before, then the bench changes below):
  - *The same code, slower here.* Every session at 1 frame/s, four runs: **58–65 µs a frame**
    (36 µs the evening before) and p99 **159–364 ms** (9.6–47.4 before); 10 % at 20 frames/s,
    one run: 36 µs, p99 38.3 ms (met). The flood in `bench/relay.py` the same morning: 5.7 and
    6.3 µs a frame, as before (5.5–6.7). The load generator, unchanged, took 32–34 % + 32–34 %
    of a core where it had taken 20 % + 23 %, and opening 10,000 sessions took 134–148 s where
    it had taken ~90 s: this machine runs the many-socket shape about 1.6× slower than the
    last one while the one-socket flood runs as fast. The p99 target at a frame a second is
    therefore met on one machine and missed on another.
  - *What that p99 is made of* (`--latency-trace`): the first two seconds of streaming, when
    9,800 prompts reach the master within one second while every stream's first frames start,
    hold 6 % of the frames and p99s of 292–463 ms; the seconds after have p99s of 18–25 ms with
    spikes of 58–83 ms 5 s apart (the bookkeeping rounds' interval; traced below). With
    more than 1 % of the frames in the start-up, the start-up is the p99. `bench/scale.py`
    now also prints the p99 of the frames sent once every session streams (from one period
    after the last prompt), and the CPU per frame split into the master's own and the kernel's.
  - *The floor in the same run.* `bench/scale.py` now runs `bench/forwarder.py` after its
    master has stopped, with as many sockets as streamed, at the same rate and frame size. At
    9,800 × 1/s: master 63 µs a frame (the kernel's 12), the bare forwarder **16.3 µs** (the
    kernel's 6.9): the master 3.9× the floor. At 1,000 × 20/s: master 36 µs (the kernel's 9),
    the forwarder **25.3 µs** (the kernel's 18.3): 1.4×. Run alone the same morning the
    forwarder cost 15.0 µs at 9,000 × 1/s, 28.9 µs at 1,000 × 10/s and 30.6 µs at 100 × 20/s.
    Twice the flood is 11.4–12.6 µs: **the floor alone misses it in every shape measured**,
    before a WebSocket is parsed or a frame relayed. uvloop (a local change, not kept): the
    forwarder 12.4 µs against 15.0 (its own time 3.6 against 8.8 µs, the kernel's 8.8 against
    6.2), the master 58 against 61 µs a frame and p99 159 against 302 ms, one run each.
  - *Where the master's time goes at 9,800 × 1/s* (py-spy, 20 s of streaming): the path from
    the socket read to the edge write 57 % of the samples (of their own time: the link
    reader's parse 5 %, the relay's publish and replay ring 9 %, the edge socket's offer and
    the framing 8 %), `transport.write` 15 % (nearly all its send call), waiting in and
    returning from epoll 28 %. Per frame that is a read, a parse, a relay and a write, each on
    objects of a session the loop last touched a second before; the flood does the same work
    on one session's objects, many frames a read, which is why it costs a tenth. The next step
    that is not the floor's: the prompts' path (uvicorn's queue, Quart's task and queue, a
    task wake-up each, then websockets' send), taken in the socket's reader as the link reader
    now takes client frames, for the start-up second.
  - *The spikes every 5 s, traced* (a gc callback and a loop-lag probe in the master, by a
    `sitecustomize` not kept): each was a young collection of 50–105 ms, its generation
    holding ~130,000 objects against a threshold of 700 — 88,000 of them the replay ring's
    per-frame tuples, which CPython's tuple free list lets pile up without counting towards
    the threshold, and 9,800 pairs of `hamt` objects, each client link's context renewed by
    the relay-latency context variable every frame. A kept frame is now three deque entries
    (`replay_ring.py` rule 5) and the arrival time a plain holder set around the synchronous
    forward (`master.metrics.FrameArrival`). Same shape, one run after: the young
    collections at the bookkeeping rounds 24 ms; the seconds after the start-up p99 25–35 ms
    with one of 57 ms; p99 of the frames sent once every session streams **39.5 ms**, over
    all frames 326 ms (the start-up second: 428 ms, as before); 68 µs a frame against the
    forwarder's 18.8 µs in the same run. 10 % at 20 frames/s, one run after: p99 **31.5 ms**
    (37.6–41.8 in the morning's runs), **32 µs a frame** (36–39) against the forwarder's 23.4
    (1.4×), 0 lost of 400,000, 0 repeated, RSS peak 917 MB, stop 5.2 s. The start-up's own
    collections — middle ones of 25–67 ms every few tenths of a second while 9,800 streams
    begin — remain."""


def curve_text(figures: dict) -> str:
    return ", ".join(f"{n:,}: {mb:.0f}" for n, mb in figures["rss_curve"])


def machine() -> dict[str, str]:
    cpu = "unknown"
    memory = "unknown"
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as info:
        for line in info:
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    return {
        "nproc": str(os.cpu_count()),
        "memory": memory,
        "cpu": cpu,
        "load": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
    }


def file_search_section(quick: bool, files: str) -> tuple[str, list]:
    """The section's text and its target rows (name, measured, met); `--quick` keeps the
    last run's text and adds no rows."""
    if quick:
        if DOC.exists():
            found = re.search(
                re.escape(FILE_SEARCH_START) + r"\n(.*?)" + re.escape(FILE_SEARCH_END),
                DOC.read_text(),
                re.S,
            )
            if found:
                return found.group(1).rstrip() + "\n\n(kept from an earlier run: `--quick`)", []
        return "Not measured yet (`--quick`, and no earlier run); see docs/file-search.md.", []
    samples_path = Path(tempfile.mkstemp(prefix="rawp-file-search-", suffix=".json")[1])
    try:
        done = subprocess.run(
            [sys.executable, str(BENCH / "file_search.py"), "--files", files,
             "--samples", str(samples_path)],
            capture_output=True,
            text=True,
            timeout=3600,
            cwd=ROOT,
            check=False,
        )  # fmt: skip
        if done.returncode != 0:
            failed = f"The run failed (exit {done.returncode}):\n\n```\n{done.stderr[-2000:]}\n```"
            return failed, []
        samples = json.loads(samples_path.read_text())
    finally:
        samples_path.unlink(missing_ok=True)
    file_search.plot_cdf(samples, FILE_SEARCH_PLOT)
    plot = FILE_SEARCH_PLOT.relative_to(DOC.parent)
    text = (
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}:\n\n{done.stdout}\n"
        f"![File search latency CDF, ours against fzf]({plot})\n"
    )
    return text, samples["targets"]


def file_search_only(files: str) -> int:
    """Run the file search alone and put its figures into the current docs/benchmarks.md:
    the section between the markers and its rows of the Targets table."""
    text, targets = file_search_section(False, files)
    doc = DOC.read_text()
    start, end = doc.index(FILE_SEARCH_START), doc.index(FILE_SEARCH_END)
    doc = doc[: start + len(FILE_SEARCH_START)] + "\n" + text + "\n" + doc[end:]
    rows = "".join(
        f"| File search, {name} | {measured} | {verdict(met)} |\n"
        for name, measured, met in targets
    )
    doc = re.sub(r"^\| File search.*\n", "", doc, flags=re.M)
    table = re.search(r"## Targets\n\n(\|.*\n)+", doc)
    if table is not None:
        doc = doc[: table.end()] + rows + doc[table.end() :]
    DOC.write_text(doc)
    print(f"wrote the file-search figures into {DOC.relative_to(ROOT)}")
    return 0


def replicas_section() -> str:
    """The replicas table, or why there is none: it needs the machine's PostgreSQL and Redis,
    and a run without them should still write every other figure."""
    try:
        figures = replicas.run()
    except Exception as exc:  # no PostgreSQL or Redis, or the run failed
        return f"Not measured this run: {exc!r}"
    return replicas.report(figures)


def scale_args(no_deflate: bool, sessions: int = scale.SESSIONS, **shape) -> argparse.Namespace:
    return scale.args_for(sessions=sessions, no_deflate=no_deflate, **shape)


def cpu_per_frame_row(flood_us: float, runs: list[tuple[str, dict]]) -> tuple:
    """Issue 35's row: the master's CPU per frame at scale within 2× the flood's (the relay
    benchmark's, this run), with the same-shape floor of a bare forwarder beside each."""
    shown = [
        f"{name}: {scale.per_frame_us(f):.0f} µs (floor {f.get('floor_us', scale.NAN):.0f})"
        for name, f in runs
    ]
    met = all(scale.per_frame_us(f) <= 2 * flood_us for _, f in runs)
    return (
        "Master CPU per frame at 10,000 sessions within 2× the flood's (issue 35)",
        met,
        f"{'; '.join(shown)}; flood {flood_us:.1f} µs",
        "cpu35",
    )


def scale_plot(runs: list[tuple[str, dict]]) -> str:
    """The RSS-vs-sessions PNG, as a Markdown image, or why there is none."""
    if not plots.available():
        return "(No plot this run: matplotlib is missing; `pip install -e '.[bench]'`.)"
    path = plots.rss_vs_sessions(runs, 1024.0, SCALE_PLOT)
    return f"![master RSS vs sessions]({path.relative_to(DOC.parent).as_posix()})"


def gateway_figures() -> dict:
    """bench/gateway.py's figures, measured in a new process: its memory target is this
    process's RSS, and run here after the 10,000-session runs it read what those had left in
    the allocator (374 MB against 186 MB alone, 2026-12-06), not the gateway's."""
    with tempfile.TemporaryDirectory(prefix="rawp-bench-gateway-") as temp:
        out = Path(temp) / "figures.pickle"
        subprocess.run(
            [sys.executable, "-c", GATEWAY_CHILD, str(BENCH), str(out)], check=True, cwd=ROOT
        )
        return pickle.loads(out.read_bytes())


def verdict(met: float) -> str:
    return "met" if met else "**missed**"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip file search, keep its figures")
    parser.add_argument(
        "--file-search-only",
        action="store_true",
        help="run only the file search and rewrite its section and target rows in place",
    )
    parser.add_argument(
        "--files",
        default=",".join(map(str, file_search.SIZES)),
        help="file-search tree sizes, comma-separated (1,000,000 and 100,000)",
    )
    args = parser.parse_args()

    if args.file_search_only:
        return file_search_only(args.files)
    host = machine()  # the load average at start, before any benchmark runs
    began = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print("relay …", flush=True)
    relay_figures = relay.run()
    print("fan-out …", flush=True)
    fanout_figures = fanout.run()
    print("sessions at scale …", flush=True)
    scale_figures = scale.run(scale_args(no_deflate=False))
    scale_plain = scale.run(scale_args(no_deflate=True))
    print("ten thousand sessions …", flush=True)
    scale_large = scale.run(scale_args(no_deflate=False, sessions=scale.LARGE))
    print("ten thousand sessions, every one at 1 frame/s …", flush=True)
    scale_every = scale.run(
        scale_args(no_deflate=False, sessions=scale.LARGE, share=1.0, rate=1, seconds=20.0)
    )
    rss_plot = scale_plot(
        [
            (f"{scale.SESSIONS:,} sessions", scale_figures),
            (f"{scale.LARGE:,} sessions", scale_large),
        ]
    )
    print("replicas …", flush=True)
    replicas_table = replicas_section()
    print("start-up …", flush=True)
    startup_figures = startup.run()
    print("rendering …", flush=True)
    render_figures = render.run()
    print("gateway …", flush=True)
    gateway = gateway_figures()
    print("file search …" if not args.quick else "file search: kept (--quick)", flush=True)
    file_search_text, file_search_targets = file_search_section(args.quick, args.files)
    print("file search through the master …", flush=True)
    search_figures = search_relay.run()
    load_after = ", ".join(f"{x:.2f}" for x in os.getloadavg())

    targets = [
        ("Relay to the wire: direct ≥ 50 % of a bare `websockets` pair",
         relay_figures["met_wire"], f"{relay_figures['wire_ratio']:.0%}", "relay"),
        ("Relay throughput: master path ≥ 80 % of direct", relay_figures["met_throughput"],
         f"{relay_figures['ratio']:.0%}", "relay"),
        ("Relay latency: ≤ 2 ms p99 added at 1,000 frames/s", relay_figures["met_latency"],
         f"{relay_figures['added_p99_ms']:+.2f} ms", "relay"),
        ("Rendering 100 KB for Discord and Slack: ≤ 5 ms", render_figures["met"],
         f"Discord {render_figures['discord_max_ms']:.1f} ms, "
         f"Slack {render_figures['slack_max_ms']:.1f} ms (worst)", "render"),
        ("Sessions at scale: 1,000 sessions, RSS ≤ 300 MB, p99 ≤ 50 ms, none lost "
         "(edges offering permessage-deflate, as browsers do)", scale_figures["met"],
         f"{scale_figures['rss_peak_mb']:.0f} MB, p99 {scale_figures['p99_ms']:.1f} ms, "
         f"{scale_figures['lost']:.0f} lost", "scale"),
        ("Ten thousand sessions (issue 20 §3): RSS ≤ 1 GB, p99 ≤ 50 ms with 10 % streaming at "
         "20 frames/s, none lost, an edge socket each", scale_large["met"],
         f"{scale_large['rss_peak_mb']:.0f} MB ({scale_large['kb_per_session']:.0f} KB per idle "
         f"session), p99 {scale_large['p99_ms']:.1f} ms, {scale_large['lost']:,.0f} lost, "
         f"{scale_large['edges']:,.0f} edges", "scale10k"),
        ("Ten thousand sessions, every one at 1 frame/s (issue 35): RSS ≤ 1 GB, p99 ≤ 50 ms, "
         "none lost or repeated, stop ≤ 10 s", scale_every["met"],
         f"{scale_every['rss_peak_mb']:.0f} MB, p99 {scale_every['p99_ms']:.1f} ms (once every "
         f"session streams {scale_every['p99_all_streaming_ms']:.1f} ms), "
         f"{scale_every['lost']:,.0f} lost, {scale_every['repeated']:,.0f} repeated, stop "
         f"{scale_every['stop_s']:.1f} s", "scale10k"),
        cpu_per_frame_row(
            relay_figures["master_master_us"],
            [("10 % at 20 frames/s", scale_large), ("every one at 1 frame/s", scale_every)],
        ),
        ("Start-up, `rawp up` to ready: ≤ 3 s", startup_figures["met"],
         f"{max(startup_figures['first_max'], startup_figures['again_max']):.2f} s (worst)",
         "startup"),
    ]  # fmt: skip
    targets += [(*row, "gateway") for row in gateway_bench.targets(gateway)]
    summary = ["| target | measured | |", "|---|---|---|"]
    for name, met, measured, _ in targets:
        summary.append(f"| {name} | {measured} | {verdict(met)} |")
    for name, measured, met in file_search_targets:
        summary.append(f"| File search, {name} | {measured} | {verdict(met)} |")
    missed = sorted({key for _, met, _, key in targets if not met})
    if not all(met for _, _, met in file_search_targets):
        missed.append("file-search")
    causes = "\n\n".join(f"### {key}\n\n{CAUSES[key]}" for key in missed) or "None this run."

    doc = f"""# Benchmarks

Written by `.venv/bin/python bench/run_all.py` (issue 7) on {began}. Each benchmark runs alone
with its own command (`bench/relay.py`, `bench/replicas.py`, `bench/startup.py`,
`bench/render.py`, `bench/file_search.py`) and measures its baseline in the same run: on a
shared machine absolute times drift, the ratios less so. Benchmarks measure; tests assert —
none of this is in the test suite.

## Machine

| | |
|---|---|
| CPUs (nproc) | {host["nproc"]} |
| CPU model | {host["cpu"]} |
| memory | {host["memory"]} |
| load average at start (1, 5, 15 min) | {host["load"]} |
| load average at the end | {load_after} |
| Python | {host["python"]} |
| system | {host["system"]} |

## Targets

{chr(10).join(summary)}

## Relay (`bench/relay.py`)

One session of a `script` agent (jsonl) printing `agent.text.delta` lines as fast as it can,
each stamped with the system-wide monotonic clock; the edge (this benchmark, Python,
`websockets`) computes each frame's latency on arrival. *Direct*: the client's own WebSocket
after `session/init`; *master*: the master's edge WebSocket, the master relaying from the
client; *wire*: the ceiling, a bare `websockets` server process sending the same frame text
(the client's `agent.text.delta`, same size) as fast as it can, no agent and no client. Every
socket is uncompressed, as the master's link to the client is. Real processes on loopback;
{relay.ROUNDS} interleaved rounds of {relay.FLOOD_FRAMES:,} frames (flood) and
{relay.PACED_SECONDS:.0f} s at {relay.PACED_RATE:,} frames/s (paced). CPU per frame: user +
system time of the client (its agent excluded) and of the master over each flood turn, divided
by its frames (psutil), median of the rounds.

{relay.report(relay_figures)}

The direct path is bounded by the client, which reads the script's stdout, checks every line
against the event schema, stamps, buffers and sends it; the wire row is what the socket and
the receiver alone allow. On two cores the master path also shares the CPUs among four busy
processes (agent, client, master, receiver) where the direct path has three, so the ratio
includes that contention. "Added"
latency is the master percentile minus the direct percentile of the same run; the tail is noisy
on a shared machine (a direct p99 above the master's has been seen).

## Fan-out (`bench/fanout.py`)

The same stack and agent; one session read by 1, 10 and 100 edge WebSockets of the master
(all read by the one benchmark process). Flood: {fanout.FLOOD_FRAMES:,} frames; paced:
{fanout.PACED_RATE} frames/s for {fanout.PACED_SECONDS:.0f} s, i.e. 100 × the socket count
deliveries a second. The issue sets no target here. The CPU column (user + system time over
wall time of the flood turn; 100 % is one core) says which side is saturated. The edges offer
permessage-deflate (`websockets` defaults); the master declines it, so frames go uncompressed.
Runs drift: the 100-socket p99 has been 12 ms in one run and 290 ms in another.

{fanout.report(fanout_figures)}

## Sessions at scale (`bench/scale.py`)

One master process; a load generator in two processes: a wire-level local client (aiohttp,
paired through `POST /v1/auth/pair`, config synced) and the edges (this process, `websockets`,
one edge user, one socket per session). {scale.SESSIONS:,} sessions are opened
{scale.PARALLEL} at a time (that user's Edge API budget raised, as below);
{scale.STREAMING_SHARE:.0%} of them then stream
at {scale.RATE} frames/s for {scale.SECONDS:.0f} s. Run twice: edges offering
permessage-deflate (the `websockets` default, and what every browser does), then edges that do
not (`--no-deflate`), which is the comparison.

Edges offering deflate:

{scale.report(scale_figures)}

Edges not offering deflate:

{scale.report(scale_plain)}

## Ten thousand sessions (`bench/scale.py --sessions {scale.LARGE}`, issue 20 §3)

The same benchmark with {scale.LARGE:,} sessions, edges offering deflate. The edge user's Edge
API budget (30 requests/s for everybody) is raised for this user only, by the master's
`--edge-user-rate-limits {scale.SUBJECT}=…` (RAWP_EDGE_USER_RATE_LIMITS), and the sessions are
opened {scale.PARALLEL} at a time; the bench raises its descriptor limit to the hard limit
({scale_large["fd_limit"]:,.0f} here) before starting the master, which inherits it.

{scale.report(scale_large)}

{rss_plot}

The RSS sampled while opening (sessions: MB): {curve_text(scale_large)}.

Issue 35's other shape, every one of the {scale.LARGE:,} sessions streaming at 1 frame/s for
20 s (`--share 1.0 --rate 1 --seconds 20`):

{scale.report(scale_every)}

{SCALE_MEMORY}

## Replicas (`bench/replicas.py`, issue 9)

Relay throughput and latency through two master replicas against one, in the same run. Two
deployments side by side, each with a fresh PostgreSQL database, its own Redis key prefix, one
shared state directory and a real client paired through its first replica. *One replica*: one
`rawp master --redis-url …`, the session created on it and its edge WebSocket on it. *Two
replicas*: the session created on replica A, which holds the client link, and the edge
WebSocket on replica B, so every frame crosses Redis from A to B (and the prompt from B to A);
the run checks that A alone held the client link to the end. *Baseline*: the relay benchmark's
master without a Redis URL (in-process relay), with a client of its own, measured in the same
run. The same agent, turns and rounds as the relay benchmark ({relay.ROUNDS} rounds of
{relay.FLOOD_FRAMES:,} frames, then {relay.PACED_SECONDS:.0f} s at {relay.PACED_RATE:,} frames/s),
the three paths interleaved. The issue sets no target; "two against one" is two replicas minus
one.

{replicas_table}

With a Redis URL even a lone master relays through Redis (it writes each client frame with a
script and delivers to its own edges from the session's channel), so two against one is the
cost of the edge landing on another replica, which a load balancer without sticky sessions
makes the common case, and one replica against the baseline is the cost of Redis itself. Two
replicas spread that work over two processes, which on two cores can make the flood faster
than one replica; the idle deployments meanwhile only renew leases.

## Start-up (`bench/startup.py`)

`rawp up --platform console` with empty stdin and a temporary state dir, from spawning the
process to its "ready" line ({startup.RUNS} runs of each kind, median).

{startup.report(startup_figures)}

## Rendering (`bench/render.py`)

A {render_figures["chars"]:,.0f}-character answer with {render_figures["fences"] // 2:.0f} code
blocks (every fifth longer than a Discord message; code lines hold `<`, `>`, `&`), {render.REPEAT}
repetitions each.

{render.report(render_figures)}

The target is judged on the worst repetition, not the median.

## Gateway (`bench/gateway.py`, issue 19 §6)

{gateway_bench.__doc__.split(chr(10) * 2, 1)[1].split("Targets (issue 19)")[0].strip()}

{gateway_bench.report(gateway)}

## File search (`bench/file_search.py`)

{FILE_SEARCH_START}
{file_search_text}
{FILE_SEARCH_END}

docs/file-search.md explains these figures and the run-to-run spread.

### Through the master (`bench/search_relay.py`)

The same tree as a session's workspace on a real client process, paired with a real master;
the same queries ({search_figures["queries"]:.0f} each way, after the watcher settled) as
`control.file.search` frames on the client's own socket and on the master's edge socket,
timed at the edge from sending to `session.file.candidates`.

{search_relay.report(search_figures)}

## Causes of missed targets

{causes}

## Missed before, fixed in the code

{FIXED}

## Not measured yet

{NOT_MEASURED}
"""
    DOC.write_text(doc)
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
