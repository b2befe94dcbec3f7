"""The `/ops/` page's in-process history: an hour at most, bounded whoever records."""

from __future__ import annotations

from entrypoints.ops.history import OpsHistory


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_hop_s_series_is_its_ages_oldest_first_in_seconds_ago() -> None:
    clock = Clock()
    history = OpsHistory(clock=clock)
    for age in (0.0, 5.0, 12.5):
        history.record({"notifications": age, "outbox": None})
        clock.now += 10
    assert history.series("notifications") == [(30.0, 0.0), (20.0, 5.0), (10.0, 12.5)]
    assert history.series("outbox") == [(30.0, 0.0), (20.0, 0.0), (10.0, 0.0)]


def test_samples_older_than_the_window_are_dropped() -> None:
    clock = Clock()
    history = OpsHistory(window_s=3600, clock=clock)
    history.record({"notifications": 99.0})
    clock.now += 1800
    history.record({"notifications": 1.0})
    clock.now += 1801  # the first is now 3601 s old, the second 1801 s
    assert history.series("notifications") == [(1801.0, 1.0)]
    clock.now += 1800
    assert history.series("notifications") == []
    assert len(history) == 0


def test_samples_closer_than_the_spacing_are_not_kept() -> None:
    clock = Clock()
    history = OpsHistory(min_spacing_s=2, clock=clock)
    assert history.record({"outbox": 1.0})
    clock.now += 1.5
    assert not history.record({"outbox": 2.0})
    clock.now += 0.5
    assert history.record({"outbox": 3.0})
    assert [age for _, age in history.series("outbox")] == [1.0, 3.0]


def test_the_history_is_bounded_however_often_it_is_fed() -> None:
    """A day of samples every spacing step keeps no more than one hour's worth."""
    clock = Clock()
    history = OpsHistory(window_s=3600, min_spacing_s=2, clock=clock)
    for _ in range(24 * 1800):
        history.record({"outbox": 0.0})
        clock.now += 2
    assert len(history) <= 1801
    assert history.series("outbox")[0][0] <= 3600


def test_a_hop_missing_from_a_sample_is_left_out_not_zero() -> None:
    clock = Clock()
    history = OpsHistory(clock=clock)
    history.record({"outbox": 1.0})
    clock.now += 5
    history.record({"outbox": 1.0, "exports": 7.0})
    assert history.series("exports") == [(0.0, 7.0)]
