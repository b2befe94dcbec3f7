"""When a backlog is gone, read off a series of queue lengths.

The seed's model (§33) counts the debt: what is queued beyond steady flow shrinks by
(capacity - arrivals) a second until none is left. The queue a bench can count
(enrollments not yet e-mailed) never reaches zero while enrollments keep arriving:
those in flight through the relay and the worker are in it. So the backlog is gone
when the queue is back to what steady flow holds, read off the same run's last
seconds of arrivals."""

from __future__ import annotations

from collections.abc import Sequence

Trace = Sequence[tuple[float, int]]  # (seconds since the provider came back, queued)


def steady_level(trace: Trace, window_s: float) -> int:
    """The queue's 90th percentile over the trace's last `window_s` seconds: a high
    mark of steady flow that one stray spike does not set."""
    end = trace[-1][0]
    tail = sorted(queued for moment, queued in trace if moment >= end - window_s)
    return tail[int(0.9 * (len(tail) - 1))]


def drained_at(trace: Trace, window_s: float, most_in_flight: int) -> float | None:
    """The first moment the queue is down to its steady level, or None when the run
    never reached steady flow (its last `window_s` seconds still held more than
    `most_in_flight`, so there is no steady level to come back to)."""
    level = steady_level(trace, window_s)
    if level > most_in_flight:
        return None
    return next(moment for moment, queued in trace if queued <= level)


def first_at_most(trace: Trace, bound: int) -> float | None:
    return next((moment for moment, queued in trace if queued <= bound), None)
