"""Writers committing while readers tail the log: did any reader skip or go back?

The readers-never-skip check: the test runs it on the event store as shipped, the
write-path benchmark on the xid-horizon recorder it evaluates.
A position is whatever the log is ordered by: the notification id as shipped, or
(transaction id, notification id) under the horizon.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

Position = Any  # comparable: int, or a tuple
ReadAfter = Callable[[Position], Sequence[tuple[Position, int]]]
WRITERS, PER_WRITER = 10, 15  # the check's size: enough to interleave on 2 cores


def tail_while_writing(
    write: Callable[[], None], writers: int, read_after: ReadAfter, start: Position
) -> tuple[list[str], list[list[int]]]:
    """Run `writers` threads of `write` and two tailing readers until both have
    read past the last commit. Returns the problems seen and each reader's ids."""
    done = threading.Event()
    problems: list[str] = []  # filled from many threads: list.append is atomic
    seen: list[list[int]] = [[], []]

    def write_once() -> None:
        try:
            write()
        except BaseException as e:
            problems.append(f"writer: {e!r}")

    def read(mine: list[int]) -> None:
        position = start
        while True:
            finished = done.is_set()  # read once more after the writers stop
            batch = read_after(position)
            for key, notification_id in batch:
                if key <= position:
                    problems.append(f"went back from {position} to {key}")
                position = key
                mine.append(notification_id)
            if finished and not batch:
                return

    threads = [threading.Thread(target=write_once) for _ in range(writers)]
    readers = [threading.Thread(target=read, args=(seen[i],)) for i in range(2)]
    for thread in readers + threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    for thread in readers:
        thread.join()
    return problems, seen
