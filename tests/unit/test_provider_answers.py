"""What a provider answers, as both provider adapters read it (its Retry-After, its
body): a hint within reason, never a crash of the worker that reads it."""

from email.utils import formatdate

import pytest
from urllib3 import HTTPResponse

from adapters.providers.http_client import (
    MAX_ANSWER_BYTES,
    MAX_RETRY_AFTER_S,
    json_answer,
    retry_after,
)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("7", 7.0),
        (" 120 ", 120.0),
        ("9" * 400, MAX_RETRY_AFTER_S),  # float() of it is inf: no NAK can wait that
        (formatdate(4102444800 * 10, usegmt=True), MAX_RETRY_AFTER_S),  # year 3270
        ("²", None),  # a digit to str.isdigit, not to float
        ("٣", None),  # an Arabic-Indic three
        ("-5", None),
        ("soon", None),
        ("", None),
    ],
)
def test_retry_after_reads_seconds_within_a_day(header: str, seconds: float) -> None:
    assert retry_after(header) == seconds


def test_an_answer_nested_too_deep_is_unreadable_not_a_crash() -> None:
    """Both adapters read ValueError as "unreadable" (a payment's outcome is then
    unknown, an e-mail's id absent); a RecursionError would escape them."""
    deep = HTTPResponse(b"[" * 30_000 + b"]" * 30_000, status=201)  # under the cap
    with pytest.raises(ValueError, match="nests too deep"):
        json_answer(deep)


def test_an_answer_cut_at_the_limit_is_unreadable_though_it_would_parse() -> None:
    """A cut answer is never read as a whole one: `{"status": "paid"}` and the
    padding after it parse, but what came after the cut is not known."""
    cut = HTTPResponse(b'{"status": "paid"}' + b" " * MAX_ANSWER_BYTES, status=200)
    with pytest.raises(ValueError, match="over 65536 bytes"):
        json_answer(cut)
    whole = HTTPResponse(b'{"status": "paid"}', status=200)
    assert json_answer(whole) == {"status": "paid"}
