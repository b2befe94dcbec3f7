"""The address mask: what looks like a mailbox goes, what is a URL's host stays."""

from __future__ import annotations

import pytest

from application.personal_data import (
    ADDRESS_MASK,
    NAME_MASK,
    scrubbed,
    without_addresses,
)


@pytest.mark.parametrize(
    "address",
    [
        "ann@example.org",
        "Ann.O'Hara+club@mail.example.co.uk",
        "zoë.żółć@пример.рф",
        "x_y-z@sub-domain.example.museum",
        "ann@host.c0m",  # a last label with a digit in it is still a domain
    ],
)
def test_an_address_is_masked_wherever_it_stands(address: str) -> None:
    for text in (address, f"550 <{address}>: mailbox unavailable", f"to={address!r}"):
        masked = without_addresses(text)
        assert address not in masked
        assert ADDRESS_MASK in masked


@pytest.mark.parametrize(
    "text",
    [
        "nats://relay:***@n1.example.org:4222",  # a masked password, not a mailbox
        "postgresql://club:***@127.0.0.1:5432/club",
        "nats://relay@localhost:4222",  # no dot: a host name
        "user@10.0.0.5",  # an IP address: a host
        "consumer notifications:CLUB_EVENTS:42",
        "an @ alone, or a@ or @b.org",
    ],
)
def test_what_is_no_address_is_left_alone(text: str) -> None:
    assert without_addresses(text) == text


def test_a_known_address_and_name_are_masked_even_in_odd_shapes() -> None:
    text = "refused ANN@EXAMPLE.ORG? no: ann@example.org, for Ann Lee (Ann Leeds)"
    shown = scrubbed(text, email="ann@example.org", name="Ann Lee")
    assert "ann@example.org" not in shown.lower()
    assert "Ann Lee " not in shown
    assert "Ann Leeds" in shown  # a whole word only: other text is not garbled
    assert NAME_MASK in shown


def test_an_empty_name_masks_nothing() -> None:
    assert scrubbed("nothing here", email="", name="  ") == "nothing here"
