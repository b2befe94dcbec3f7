"""The store's confirmed enrollments beside the projection's: what a bench waits on."""

from __future__ import annotations

from entrypoints.ops.confirmed_totals import confirmed_totals
from entrypoints.runtime.bootstrap import confirmed_counts
from tests.builders import lesson_with_enrollments


def test_enrollments_not_yet_projected_show_as_a_lag(container) -> None:
    before = confirmed_totals(confirmed_counts(container))
    lesson_with_enrollments(container, 3)
    after = confirmed_totals(confirmed_counts(container))
    assert after.store == before.store + 3
    assert after.projection == before.projection  # no projector runs here
    assert not after.caught_up
