"""CLUB_NATS_REPLICAS: how many servers keep each stream."""

from __future__ import annotations

import pytest

from adapters.nats.streams import REPLICAS_VARIABLE, configured_replicas


def test_unset_or_blank_means_not_configured() -> None:
    assert configured_replicas({}) is None
    assert configured_replicas({REPLICAS_VARIABLE: " "}) is None


@pytest.mark.parametrize("raw", ["1", "3", "5"])
def test_a_count_from_one_to_five_is_taken(raw: str) -> None:
    assert configured_replicas({REPLICAS_VARIABLE: raw}) == int(raw)


@pytest.mark.parametrize("raw", ["0", "6", "three", "-3", "2.5"])
def test_anything_else_is_refused_with_the_fix_named(raw: str) -> None:
    with pytest.raises(ValueError, match="1 for a single NATS server, 3 for a three"):
        configured_replicas({REPLICAS_VARIABLE: raw})
