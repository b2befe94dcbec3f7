"""What text Club stores: the rule, and the schema pattern that states it."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.errors import (
    ControlCharacterError,
    InvalidTextError,
    TextLengthError,
    UnpairedSurrogateError,
)
from domain.text import SINGLE_LINE_PATTERN, single_line


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("a\u0000b", ControlCharacterError),
        ("a\u001fb", ControlCharacterError),
        ("a\u007fb", ControlCharacterError),
        ("a\u0085b", ControlCharacterError),  # NEL, a C1 control
        ("a\u2029b", ControlCharacterError),
        ("a\ud800b", UnpairedSurrogateError),
        ("\udfff", UnpairedSurrogateError),
        ("", TextLengthError),
        ("\u00a0\u2003\u3000", TextLengthError),
        ("x" * 11, TextLengthError),
    ],
)
def test_refused_text_names_its_rule(value, error) -> None:
    with pytest.raises(error):
        single_line(value, field="title", max_length=10)


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ("  Yoga\u3000", "Yoga"),
        ("Cafe\u0301", "Café"),  # NFD in, NFC out: one spelling per title
        ("🧘\u200d♀️ flow", "🧘\u200d♀️ flow"),  # joiners are not controls
        ("\ufeffx", "\ufeffx"),  # a BOM is printable enough to keep
    ],
)
def test_kept_text_is_nfc_and_trimmed(value, stored) -> None:
    assert single_line(value, field="title", max_length=10) == stored


def test_the_length_counts_code_points_after_normalisation() -> None:
    decomposed = "e\u0301" * 10  # 20 code points in, 10 out
    assert single_line(decomposed, field="title", max_length=10) == "é" * 10


@given(st.text(max_size=30))
def test_the_pattern_accepts_exactly_what_the_rule_keeps(value) -> None:
    """The schema states the rule: a string the pattern allows is kept (length
    aside), and a string it refuses is refused."""
    matches = re.fullmatch(SINGLE_LINE_PATTERN[1:-1], value) is not None
    try:
        single_line(value, field="title", max_length=1000)
    except InvalidTextError:
        kept = False
    else:
        kept = True
    assert matches == kept, unicodedata.normalize("NFC", value)
