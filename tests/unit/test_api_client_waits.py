"""The demo's client waits out a 429 or 503 by its Retry-After, within bounds,
whatever the header says."""

from __future__ import annotations

import pytest

from entrypoints.cli.api_client import LONGEST_WAIT_S, _wait_s

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("header", "wait"),
    [
        ("2", 2.0),
        (None, 1.0),
        ("soon", 1.0),
        ("nan", 1.0),
        ("inf", 1.0),
        ("-5", 0.1),
        ("1e9", LONGEST_WAIT_S),
    ],
)
def test_a_retry_after_becomes_a_bounded_wait(header: str | None, wait: float) -> None:
    assert _wait_s(header) == wait
