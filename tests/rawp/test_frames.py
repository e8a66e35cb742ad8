"""The DPS envelope: every event round-trips; bad input becomes a typed FrameError."""

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rawp.clock import FakeClock, iso
from rawp.docgen import example_frame
from rawp.errors import FrameError
from rawp.events import EVENTS
from rawp.frames import dump_frame, encode_frame, make_frame, parse_frame, session_error_frame

ALL_TYPES = sorted(EVENTS)
ID = "6a0c2f4e-8b1d-4c3e-9f5a-7b8c9d0e1f2a"
STAMP = iso(FakeClock().now())


def test_every_event_has_an_example():
    from rawp.examples import EXAMPLES

    assert set(EXAMPLES) == set(EVENTS)


@pytest.mark.parametrize("event_type", ALL_TYPES)
def test_every_event_round_trips(event_type):
    raw = json.dumps(example_frame(event_type))
    frame = parse_frame(raw)
    assert frame.known
    assert isinstance(frame.payload, EVENTS[event_type].model)
    again = parse_frame(dump_frame(frame))
    assert again == frame
    # No field of the example is lost or changed on the way (defaults may be added).
    assert _contains(json.loads(dump_frame(frame)), example_frame(event_type))


def _contains(big, small):
    if isinstance(small, dict):
        return isinstance(big, dict) and all(
            k in big and _contains(big[k], v) for k, v in small.items()
        )
    if isinstance(small, list):
        return isinstance(big, list) and len(big) == len(small) and all(map(_contains, big, small))
    return big == small


@pytest.mark.parametrize("event_type", ALL_TYPES)
def test_unknown_keys_are_ignored(event_type):
    data = example_frame(event_type)
    data["x_future"] = {"a": 1}
    data["payload"] = {**data["payload"], "x_future_field": [1, 2]}
    frame = parse_frame(json.dumps(data))
    assert "x_future_field" not in json.loads(dump_frame(frame))["payload"]
    assert frame.payload == parse_frame(json.dumps(example_frame(event_type))).payload


def _required_payload_fields():
    for event_type in ALL_TYPES:
        for name, field in EVENTS[event_type].model.model_fields.items():
            if field.is_required():
                yield event_type, name


@pytest.mark.parametrize("event_type, field", list(_required_payload_fields()))
def test_missing_required_payload_field_is_named(event_type, field):
    data = example_frame(event_type)
    del data["payload"][field]
    with pytest.raises(FrameError) as info:
        parse_frame(json.dumps(data))
    assert info.value.error_code == "INVALID_FRAME"
    assert f"payload.{field}" in info.value.message
    assert info.value.ref_message_id == data["message_id"]


@pytest.mark.parametrize("field", ["v", "type", "message_id", "timestamp", "payload"])
def test_missing_envelope_field_is_named(field):
    data = example_frame("agent.text.delta")
    del data[field]
    with pytest.raises(FrameError) as info:
        parse_frame(json.dumps(data))
    assert info.value.error_code == "INVALID_FRAME"
    assert field in info.value.message


@pytest.mark.parametrize(
    "raw, fragment",
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('"text"', "JSON object"),
        ("", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (json.dumps({**example_frame("agent.text.delta"), "v": "rawp-9"}), "v:"),
        (json.dumps({**example_frame("agent.text.delta"), "message_id": "nope"}), "UUID"),
        (json.dumps({**example_frame("agent.text.delta"), "timestamp": "yesterday"}), "ISO 8601"),
        (json.dumps({**example_frame("agent.text.delta"), "type": "Agent Text"}), "type:"),
        (json.dumps({**example_frame("agent.text.delta"), "payload": []}), "payload"),
        (
            json.dumps(
                {**example_frame("agent.text.delta"), "payload": {"content_index": -1, "text": "x"}}
            ),
            "payload.content_index",
        ),
        (
            json.dumps(
                {
                    **example_frame("agent.error"),
                    "payload": {"code": "X", "message": "m", "severity": "boom"},
                }
            ),
            "payload.severity",
        ),
    ],
)
def test_malformed_frames_give_invalid_frame(raw, fragment):
    with pytest.raises(FrameError) as info:
        parse_frame(raw)
    assert info.value.error_code == "INVALID_FRAME"
    assert fragment in info.value.message


def test_unknown_type_passes_through_untouched():
    data = {
        "v": "rawp-dps-1.0",
        "type": "agent.hologram.render",
        "message_id": "6a0c2f4e-8b1d-4c3e-9f5a-7b8c9d0e1f2a",
        "timestamp": "2026-12-01T09:30:00Z",
        "session_id": "s",
        "payload": {"anything": [1, {"nested": None}]},
    }
    frame = parse_frame(json.dumps(data))
    assert not frame.known
    assert json.loads(dump_frame(frame)) == data


def test_oversize_frame_is_frame_too_large():
    raw = json.dumps(example_frame("agent.text.delta"))
    assert parse_frame(raw, max_size=len(raw.encode())).type == "agent.text.delta"
    with pytest.raises(FrameError) as info:
        parse_frame(raw, max_size=len(raw.encode()) - 1)
    assert info.value.error_code == "FRAME_TOO_LARGE"


@given(
    st.sampled_from(ALL_TYPES),
    st.text(max_size=3000),
    st.integers(min_value=1, max_value=2000),
    st.booleans(),
)
def test_a_frame_refused_for_its_size_is_named_by_the_refusal(event_type, extra, short, first):
    # Issue 28 §3: the refusal must name the refused frame wherever its message_id sits, or
    # the sender cannot tie it to what it sent (a prompt then looked queued forever).
    data = {**example_frame(event_type), "x-padding": extra}
    if not first:  # message_id written after the payload
        data = {k: v for k, v in data.items() if k != "message_id"} | {"message_id": ID}
    raw = json.dumps(data).encode()
    with pytest.raises(FrameError) as info:
        parse_frame(raw, max_size=max(1, len(raw) - short))
    assert info.value.error_code == "FRAME_TOO_LARGE"
    assert info.value.ref_message_id == data["message_id"]
    reply = session_error_frame(info.value, session_id="s-1")
    assert reply.parent_id == reply.payload.ref_message_id == data["message_id"]


def test_an_oversized_frame_without_a_readable_id_is_refused_all_the_same():
    for raw in ("x" * 100, json.dumps([ID] * 10), json.dumps({"message_id": 7, "x": "y" * 99})):
        with pytest.raises(FrameError) as info:
            parse_frame(raw, max_size=50)
        assert info.value.error_code == "FRAME_TOO_LARGE"
        assert info.value.ref_message_id is None


def test_node_frames_carry_no_session_id():
    data = example_frame("node.config.changed")
    assert "session_id" not in data
    parse_frame(json.dumps(data))
    with pytest.raises(FrameError, match="node frame") as info:
        parse_frame(json.dumps({**data, "session_id": "s"}))
    assert info.value.ref_message_id == data["message_id"]  # the refusal names it


def test_session_error_frame_answers_the_bad_frame():
    with pytest.raises(FrameError) as info:
        parse_frame(json.dumps({**example_frame("agent.text.delta"), "payload": {}}))
    reply = session_error_frame(info.value, session_id="s-1")
    assert reply.type == "session.error"
    assert reply.parent_id == example_frame("agent.text.delta")["message_id"]
    assert reply.payload.code == "INVALID_FRAME"
    assert reply.payload.ref_message_id == reply.parent_id
    assert parse_frame(dump_frame(reply)) == reply


def test_make_frame_validates_dict_payloads():
    frame = make_frame("agent.text.delta", {"content_index": 0, "text": "hi"}, session_id="s")
    assert frame.payload.text == "hi"
    with pytest.raises(FrameError, match=r"payload\.text"):
        make_frame("agent.text.delta", {"content_index": 0})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(st.one_of(st.binary(max_size=200), st.text(max_size=200), json_values.map(json.dumps)))
def test_parse_frame_raises_only_frame_error(data):
    try:
        parse_frame(data)
    except FrameError as exc:
        assert exc.error_code in {"INVALID_FRAME", "FRAME_TOO_LARGE"}


@given(
    st.sampled_from(ALL_TYPES),
    st.dictionaries(
        st.sampled_from(["text", "content_index", "code", "query", "x"]), json_values, max_size=4
    ),
)
def test_mangled_payloads_never_escape_as_other_exceptions(event_type, payload):
    data = {**example_frame(event_type), "payload": payload}
    try:
        frame = parse_frame(json.dumps(data))
    except FrameError:
        return
    assert frame.type == event_type


def test_protocol_doc_catalogue_is_current():
    """docs/protocol.md holds exactly the catalogue the models generate."""
    from pathlib import Path

    from rawp.docgen import replace_catalogue

    doc = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text()
    assert replace_catalogue(doc) == doc, "run `python -m rawp.docgen --write`"


@pytest.mark.parametrize("event_type", ALL_TYPES)
def test_encode_frame_writes_the_bytes_dump_frame_writes(event_type):
    # The client's hot path (issue 20) must not change a byte on the wire.
    example = example_frame(event_type)
    envelope = {
        key: example.get(key) for key in ("message_id", "session_id", "turn_id", "parent_id")
    }
    clock = FakeClock()
    expected = dump_frame(make_frame(event_type, example["payload"], clock=clock, **envelope))
    got = encode_frame(event_type, example["payload"], timestamp=clock.timestamp(), **envelope)
    assert got == expected.encode()


def test_encode_frame_of_an_unknown_type_keeps_its_payload_as_is():
    payload = {"anything": [1, "two", None]}
    got = encode_frame("vendor.thing.happened", payload, message_id=ID, timestamp=STAMP)
    frame = make_frame("vendor.thing.happened", payload, message_id=ID, clock=FakeClock())
    assert got == dump_frame(frame).encode()


def test_encode_frame_refuses_a_bad_payload_as_make_frame_does():
    bad = {"content_index": -1}
    with pytest.raises(FrameError) as made:
        make_frame("agent.text.delta", bad)
    with pytest.raises(FrameError) as encoded:
        encode_frame("agent.text.delta", bad, message_id=ID, timestamp=STAMP)
    assert str(encoded.value) == str(made.value)
    assert "payload.text" in str(encoded.value)


def _both_ways(event_type: str, payload: dict) -> tuple[object, object]:
    """encode_frame's bytes and dump_frame(make_frame(…))'s, or the class of what each raised."""
    clock = FakeClock()

    def old() -> object:
        frame = make_frame(event_type, payload, message_id=ID, session_id="s", clock=clock)
        return dump_frame(frame).encode()

    def new() -> object:
        return encode_frame(
            event_type, payload, message_id=ID, timestamp=clock.timestamp(), session_id="s"
        )

    results = []
    for way in (old, new):
        try:
            results.append(way())
        except (FrameError, TypeError) as exc:
            results.append(FrameError if isinstance(exc, FrameError) else TypeError)
    return results[0], results[1]


@given(
    text=st.text(alphabet=st.characters(exclude_categories=()), max_size=60),  # surrogates too
    index=st.integers(min_value=-2, max_value=2**63),
)
@example(text="a\ud800b", index=0)
@example(text='</script>\u2028\x00"', index=2**63)
def test_encode_frame_writes_any_text_delta_as_dump_frame_does(text, index):
    # pydantic writes the payload's JSON on this path (issue 35): the bytes on the wire, and
    # what is refused (a lone surrogate: orjson's TypeError), must stay as they were.
    old, new = _both_ways("agent.text.delta", {"content_index": index, "text": text})
    assert new == old


@given(
    cost=st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False, min_value=0)),
    tokens=st.integers(min_value=0, max_value=2**53),
    estimated=st.booleans(),
)
def test_encode_frame_writes_any_usage_as_dump_frame_does(cost, tokens, estimated):
    payload = {"input_tokens": tokens, "output_tokens": 1, "cost_usd": cost, "estimated": estimated}
    old, new = _both_ways("session.usage", payload)
    assert new == old
