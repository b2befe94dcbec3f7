"""Given/when/then for aggregates: given past facts, when a command, then new facts.

`given` rebuilds the aggregate by replaying the events its steps recorded, exactly
as the repository does, so a test also proves the `@event` bodies only assign
(a guard in one would re-run here and fail). `when` returns the new facts for the
test's `then` asserts; an error propagates, and then nothing was recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from eventsourcing.domain import Aggregate

A = TypeVar("A", bound=Aggregate)


def given(make: Callable[[], A], *steps: Callable[[A], object]) -> A:
    """The aggregate `make` creates after `steps`, rebuilt from its events."""
    live = make()
    for step in steps:
        step(live)
    return replayed(live)


def when(aggregate: A, command: Callable[[A], object]) -> list[Any]:
    """The facts `command` records (an error propagates: then nothing was)."""
    command(aggregate)
    return list(aggregate.collect_events())


def replayed(live: A) -> A:
    """`live` rebuilt from the events it has recorded (and not yet collected), after
    checking that the replay arrives at the same state as the live commands did."""
    rebuilt: Any = None
    for recorded in live.collect_events():
        rebuilt = recorded.mutate(rebuilt)
    assert vars(rebuilt) == vars(live), "replay differs from the live aggregate"
    return rebuilt  # type: ignore[no-any-return]
