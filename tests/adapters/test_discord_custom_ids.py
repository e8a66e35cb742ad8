"""Button custom_ids: within Discord's 100 characters, and they parse back to what they say."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from adapters.discord import custom_ids

snowflakes = st.integers(min_value=10**16, max_value=2**63 - 1).map(str)


@given(snowflakes, st.text(min_size=1, max_size=200), st.text(min_size=1, max_size=200))
@example("100000000000000000", "0:\x80\x80\x80𐀀𐀀𐀀𐀀", "0000")  # "#7" escapes to "%237"
def test_every_id_fits_and_round_trips(key, interaction_id, option_id):
    choice = custom_ids.choice_id(key, interaction_id, option_id, index=7)
    encoded = choice.encode()
    assert len(encoded) <= custom_ids.MAX_CUSTOM_ID
    parsed = custom_ids.parse(encoded)
    assert parsed == choice
    assert custom_ids.TEMPLATE.fullmatch(encoded)
    if parsed.interaction == interaction_id:  # it fit: the option is by id or by index
        assert parsed.option in (option_id, "#7")
    else:
        assert parsed.interaction == custom_ids.digest(interaction_id)


def test_short_ids_are_readable_and_foreign_ids_are_not_ours():
    choice = custom_ids.choice_id("123", "perm-1", "allow", 0)
    assert choice.encode() == "rawp:c:123:perm-1:allow"
    assert custom_ids.choice_id("123", "a:b", "x%y", 0).encode() == "rawp:c:123:a%3Ab:x%25y"
    assert custom_ids.parse("rawp:approve:turn-1") is None
    assert custom_ids.parse_modal(custom_ids.modal_id("5", "a:b")) == ("5", "a:b")
