"""The one way Club retries: a delay under a ceiling that doubles with each attempt.

Every retry draws its pause from a `BackoffPolicy`: the ceiling starts at `first`,
doubles with each attempt and stops at `cap`; the `Jitter` says what is drawn under
it, so processes that failed together do not all come back in the same instant.
"""

from __future__ import annotations

import enum
import random

import attrs

MAX_DOUBLINGS = 64  # any cap is reached long before: 2**64 times a millisecond


def doubled(first: float, times: int, cap: float) -> float:
    """`first` doubled `times` times, at most `cap`. The count is bounded before
    the power is taken: a count of failures has no bound of its own, and past
    2**1023 a float overflows — a role waiting out a long outage would crash on
    the attempt that outlived it."""
    return min(cap, first * 2.0 ** min(max(times, 0), MAX_DOUBLINGS))


class Jitter(enum.Enum):
    """What a delay draws under its ceiling."""

    FULL = "full"  # uniform(0, ceiling): the widest spread; a delay may be ~0
    EQUAL = "equal"  # uniform(ceiling / 2, ceiling): spread, and never below half
    NONE = "none"  # the ceiling itself: a fixed schedule (one message's redelivery)


def _not_negative(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if value < 0:
        msg = f"{attribute.name} must not be negative: {value}"
        raise ValueError(msg)


@attrs.frozen(kw_only=True)
class BackoffPolicy:
    """Exponential backoff, capped, with the named jitter. Seconds throughout.

    `attempt` counts retries from 1: the first retry waits under `first`, each
    later one under twice the last ceiling, never more than `cap`. A count of
    deliveries or of failures in a row is such a number; 0 (or less) reads as 1."""

    first: float = attrs.field(validator=_not_negative)
    cap: float = attrs.field(validator=_not_negative)
    jitter: Jitter

    def ceiling(self, attempt: int) -> float:
        """The longest pause before `attempt`: bounded for any count (`doubled`)."""
        return doubled(self.first, attempt - 1, self.cap)

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """The pause before `attempt`, drawn under its ceiling; `rng` for the draw
        (a seeded one in tests), else the process's shared generator."""
        ceiling = self.ceiling(attempt)
        if self.jitter is Jitter.NONE:
            return ceiling
        uniform = rng.uniform if rng is not None else random.uniform
        low = 0.0 if self.jitter is Jitter.FULL else ceiling / 2
        return uniform(low, ceiling)
