"""The store's confirmed enrollments beside the projection's: what a bench waits on."""

from __future__ import annotations

from entrypoints.ops.confirmed_totals import confirmed_totals
from tests.builders import lesson_with_enrollments


def test_enrollments_not_yet_projected_show_as_a_lag(container) -> None:
    before = confirmed_totals(container)
    lesson_with_enrollments(container, 3)
    after = confirmed_totals(container)
    assert after.store == before.store + 3
    assert after.projection == before.projection  # no projector runs here
    assert not after.caught_up
