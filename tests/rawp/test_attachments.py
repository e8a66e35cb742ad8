"""The one set of attachment limits, and images recognised by their bytes (rawp.attachments)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rawp.attachments import AttachmentLimits, decode, encoded_size, image_type
from tests.images import PDF, tiny_png


@given(st.binary(max_size=200))
def test_the_encoded_size_is_what_base64_makes_and_decode_reverses_it(data):
    encoded = base64.b64encode(data).decode()
    assert encoded_size(len(data)) == len(encoded)
    assert decode(encoded) == data


@pytest.mark.parametrize("bad", ["%%%", "abc", "YQ==YQ==x", "YQ = ="])
def test_decode_refuses_what_is_not_strict_base64(bad):
    assert decode(bad) is None


def test_limits_name_the_file_and_the_rule():
    limits = AttachmentLimits(max_count=2, max_bytes_each=10, max_encoded_total=24)
    assert limits.refusal([("a.png", 10), ("b.png", 6)]) is None  # 16 + 8 base64 chars
    assert limits.refusal([("a.png", 11)]) == (
        "a.png is 11 bytes; an attachment may be at most 10 bytes"
    )
    assert limits.refusal([("a.png", 10), ("b.png", 7)]) == (
        "b.png does not fit: the attachments of one prompt may be at most 18 bytes together"
    )
    assert limits.refusal([("a", 1)] * 3) == "at most 2 attachments fit in one prompt"
    assert limits.too_large("c.bin", 10) is None


def test_the_default_limits_keep_a_full_prompt_inside_one_frame():
    limits = AttachmentLimits()
    assert limits.max_encoded_total + 64 * 1024 <= 1024 * 1024  # the default max_frame_size
    assert encoded_size(limits.max_bytes_each) <= limits.max_encoded_total


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (tiny_png(), "image/png"),
        (b"\xff\xd8\xff\xe0" + b"\x00" * 10, "image/jpeg"),
        (b"GIF89a" + b"\x00" * 10, "image/gif"),
        (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"),
        (PDF, None),
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", None),
        (b"RIFF\x10\x00\x00\x00WAVE", None),
        (b"", None),
    ],
    ids=["png", "jpeg", "gif", "webp", "pdf", "svg", "wav", "empty"],
)
def test_an_image_is_known_by_its_bytes(data, expected):
    assert image_type(data) == expected
