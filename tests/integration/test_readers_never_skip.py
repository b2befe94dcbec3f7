"""Tailing readers of the notification log never pass over a later-committed id.

This guards the event store's table lock: writers that committed out of id order
would let a reader see id N+1 before id N commits, and skip N forever.
"""

from __future__ import annotations

import threading

from tests.integration.helpers import lesson_with_enrollments

WRITERS, PER_WRITER = 10, 15


def test_ten_writers_two_tailing_readers(container) -> None:
    recorder = container.app.recorder
    start_after = recorder.max_notification_id() or 0
    done = threading.Event()
    problems: list[str] = []
    seen: list[list[int]] = [[], []]

    def write() -> None:
        try:
            lesson_with_enrollments(container, PER_WRITER)
        except BaseException as e:
            problems.append(f"writer: {e!r}")

    def read(mine: list[int]) -> None:
        position = start_after
        while True:
            finished = done.is_set()  # read once more after the writers stop
            batch = recorder.select_notifications(
                start=position, limit=50, inclusive_of_start=False
            )
            for notification in batch:
                if notification.id <= position:
                    problems.append(f"went back from {position} to {notification.id}")
                position = notification.id
                mine.append(notification.id)
            if finished and not batch:
                return

    writers = [threading.Thread(target=write) for _ in range(WRITERS)]
    readers = [threading.Thread(target=read, args=(seen[i],)) for i in range(2)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    done.set()
    for thread in readers:
        thread.join()

    assert problems == []
    everything = [
        n.id for n in recorder.select_notifications(start=start_after + 1, limit=10**6)
    ]
    assert len(everything) == WRITERS * (1 + 2 * PER_WRITER)
    assert seen[0] == everything
    assert seen[1] == everything
