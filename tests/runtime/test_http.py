"""Request bodies: bad JSON and wrong shapes become clear 400/413 errors (RAWP §7.1)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from rawp.errors import BadRequest, PayloadTooLarge, RawpError
from runtime.http import json_object, validate


class Pair(BaseModel):
    pairing_token: str
    device_name: str


@pytest.mark.parametrize("raw", [b"", b"{", b"[]", b'"x"', b"null", b"\xff"])
def test_bad_bodies_are_400(raw):
    with pytest.raises(BadRequest):
        json_object(raw)


def test_oversize_body_is_413():
    with pytest.raises(PayloadTooLarge):
        json_object(b'{"a": "' + b"x" * 100 + b'"}', max_bytes=50)


def test_validate_names_every_field_and_ignores_unknown_keys():
    with pytest.raises(BadRequest) as info:
        validate(Pair, {"pairing_token": 3})
    assert "pairing_token" in info.value.message and "device_name" in info.value.message
    ok = validate(Pair, {"pairing_token": "t", "device_name": "d", "future": 1})
    assert ok.device_name == "d"


@given(st.binary(max_size=100))
def test_any_bytes_give_an_object_or_a_rawp_error(raw):
    try:
        assert isinstance(json_object(raw), dict)
    except RawpError as exc:
        assert exc.status in (400, 413)
