"""Putting an agent's file back together from its `agent.file` pieces
(gateway.rendering.file_assembly): any chunking in any order reassembles; anything else fails
clearly, bounded, never raising."""

from __future__ import annotations

import base64
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.rendering.file_assembly import AssembledFile, FileAssembler, FileProblem
from rawp.events import AgentFile


def pieces_of(data: bytes, cuts: list[int], file_id: str = "f-1") -> list[AgentFile]:
    """`data` cut at `cuts` (positions), as the frames of one file."""
    bounds = sorted({0, *(c % (len(data) + 1) for c in cuts), len(data)})
    parts = [data[a:b] for a, b in itertools.pairwise(bounds)] or [b""]
    return [
        AgentFile(
            file_id=file_id,
            name="report.bin",
            mime_type="application/octet-stream",
            size_bytes=len(data),
            data=base64.b64encode(part).decode(),
            chunk_index=index,
            final=index == len(parts) - 1,
        )
        for index, part in enumerate(parts)
    ]


def feed(assembler: FileAssembler, chunks: list[AgentFile]) -> list:
    return [outcome for c in chunks if (outcome := assembler.add(c)) is not None]


@st.composite
def chunked(draw, max_size: int = 2000):
    data = draw(st.binary(max_size=max_size))
    cuts = draw(st.lists(st.integers(min_value=0, max_value=max_size), max_size=12))
    chunks = pieces_of(data, cuts)
    return data, draw(st.permutations(chunks))


@settings(max_examples=200, deadline=None)
@given(chunked())
def test_any_chunking_in_any_order_reassembles_the_file(case):
    data, chunks = case
    assembler = FileAssembler(max_held_bytes=4096)
    outcomes = feed(assembler, chunks)
    assert outcomes == [AssembledFile("f-1", "report.bin", "application/octet-stream", data)]
    assert not assembler.pending and assembler.held_bytes == 0
    assert feed(assembler, chunks) == []  # its pieces again (a replay): ignored, not restarted


@settings(max_examples=200, deadline=None)
@given(chunked(), st.data())
def test_a_missing_piece_ends_the_file_with_a_reason_at_the_turn_end(case, draw):
    data, chunks = case
    if len(chunks) < 2:
        return  # nothing can go missing from a one-piece file but the piece itself
    lost = draw.draw(st.sampled_from(chunks))
    outcomes = feed(assembler := FileAssembler(), [c for c in chunks if c is not lost])
    assert outcomes == []
    assert assembler.pending and assembler.held_bytes == len(data) - len(
        base64.b64decode(lost.data)
    )
    problems = assembler.abandon()
    assert [p.reason for p in problems] == ["its last part never came"]
    assert problems[0].name == "report.bin" and problems[0].size_bytes == len(data)
    assert not assembler.pending and assembler.held_bytes == 0


@settings(max_examples=100, deadline=None)
@given(chunked(), st.data())
def test_a_piece_repeated_with_the_same_bytes_is_harmless(case, draw):
    data, chunks = case
    repeated = draw.draw(st.sampled_from(chunks))
    at = draw.draw(st.integers(min_value=0, max_value=len(chunks)))
    outcomes = feed(FileAssembler(), [*chunks[:at], repeated, *chunks[at:]])
    assert [o.data for o in outcomes if isinstance(o, AssembledFile)] == [data]


def chunk(**changes) -> AgentFile:
    fields = dict(
        file_id="f-1",
        name="a.txt",
        mime_type="text/plain",
        size_bytes=6,
        data=base64.b64encode(b"abc").decode(),
        chunk_index=0,
        final=False,
    )
    return AgentFile(**{**fields, **changes})


def only_problem(outcomes: list) -> str:
    assert len(outcomes) == 1 and isinstance(outcomes[0], FileProblem), outcomes
    return outcomes[0].reason


def test_each_way_a_file_can_go_wrong_gets_its_own_reason():
    def_ = base64.b64encode(b"def").decode()
    cases = {
        "its part 1 is not valid base64": [chunk(), chunk(chunk_index=1, data="@@", final=True)],
        "its part 0 came twice, different": [chunk(), chunk(data=def_)],
        "it has two different last parts": [
            chunk(chunk_index=1, final=True, size_bytes=9),
            chunk(chunk_index=2, final=True, size_bytes=9),
        ],
        "a part came after its last part": [
            chunk(chunk_index=1, final=True, data=def_),
            chunk(chunk_index=2, data=def_),
        ],
        "it is larger than the 4 bytes it announced": [
            chunk(size_bytes=4),
            chunk(chunk_index=1, size_bytes=4, data=def_, final=True),
        ],
        "it arrived with 3 of the 6 bytes it announced": [chunk(final=True)],
    }
    for reason, chunks in cases.items():
        assembler = FileAssembler()
        assert only_problem(feed(assembler, chunks)) == reason
        assert assembler.held_bytes == 0 and not assembler.pending


def test_the_bytes_held_for_a_session_are_capped():
    assembler = FileAssembler(max_held_bytes=8)
    # Announced larger than the cap: refused at once, nothing held, its other pieces ignored.
    reason = only_problem(feed(assembler, [chunk(file_id="big", size_bytes=9)]))
    assert reason == "it is larger than what the gateway holds for one session"
    assert feed(assembler, [chunk(file_id="big", chunk_index=1, final=True)]) == []
    # Two files that fit alone but not together: the second fails, the first still arrives.
    assert feed(assembler, [chunk(file_id="one")]) == []
    assert assembler.held_bytes == 3
    assert only_problem(
        feed(assembler, [chunk(file_id="two"), chunk(file_id="two", chunk_index=1)])
    )
    assert assembler.held_bytes == 3
    done = feed(assembler, [chunk(file_id="one", chunk_index=1, final=True, data=def_bytes())])
    assert [o.data for o in done] == [b"abcdef"]
    assert assembler.held_bytes == 0


def def_bytes() -> str:
    return base64.b64encode(b"def").decode()


def test_only_so_many_files_are_unfinished_at_once():
    assembler = FileAssembler(max_files=2)
    assert feed(assembler, [chunk(file_id="a"), chunk(file_id="b")]) == []
    assert only_problem(feed(assembler, [chunk(file_id="c")])).startswith("it came while 2 other")
    assert sorted(p.file_id for p in assembler.abandon()) == ["a", "b"]


junk_chunks = st.builds(
    AgentFile,
    file_id=st.sampled_from(["a", "b", "c"]),
    name=st.text(max_size=20),
    mime_type=st.just("application/octet-stream"),
    size_bytes=st.integers(min_value=0, max_value=64),
    data=st.one_of(
        st.binary(max_size=24).map(lambda b: base64.b64encode(b).decode()), st.text(max_size=8)
    ),
    chunk_index=st.integers(min_value=0, max_value=4),
    final=st.booleans(),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(junk_chunks, max_size=30))
def test_any_sequence_of_pieces_fails_clearly_or_assembles_within_the_cap(chunks):
    assembler = FileAssembler(max_held_bytes=48, max_files=2)
    for each in chunks:
        outcome = assembler.add(each)  # never raises
        assert outcome is None or isinstance(outcome, AssembledFile | FileProblem)
        if isinstance(outcome, AssembledFile):
            assert len(outcome.data) <= 48 and outcome.file_id == each.file_id
        if isinstance(outcome, FileProblem):
            assert outcome.reason and outcome.file_id == each.file_id
        assert 0 <= assembler.held_bytes <= 48
    for problem in assembler.abandon():
        assert problem.reason == "its last part never came"
    assert assembler.held_bytes == 0 and not assembler.pending
