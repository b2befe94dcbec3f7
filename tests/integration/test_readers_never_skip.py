"""Tailing readers of the notification log never pass over a later-committed id.

This guards the event store's table lock: writers that committed out of id order
would let a reader see id N+1 before id N commits, and skip N forever.
"""

from __future__ import annotations

from adapters.postgres.tailing import PER_WRITER, WRITERS, tail_while_writing
from entrypoints.cli.demo import lesson_with_enrollments


def test_ten_writers_two_tailing_readers(container) -> None:
    recorder = container.app.recorder
    start_after = recorder.max_notification_id() or 0

    def read_after(position: int) -> list[tuple[int, int]]:
        batch = recorder.select_notifications(
            start=position, limit=50, inclusive_of_start=False
        )
        return [(n.id, n.id) for n in batch]

    problems, seen = tail_while_writing(
        lambda: lesson_with_enrollments(container, PER_WRITER),
        WRITERS,
        read_after,
        start_after,
    )

    assert problems == []
    everything = [
        n.id for n in recorder.select_notifications(start=start_after + 1, limit=10**6)
    ]
    assert len(everything) == WRITERS * (1 + 2 * PER_WRITER)
    assert seen[0] == everything
    assert seen[1] == everything
