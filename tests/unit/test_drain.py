"""bench/drain.py: the backlog drain's headline figure is read off a queue series."""

from bench.drain import drained_at, first_at_most, steady_level


def _draining(
    backlog: int, net_per_s: int, steady: int, until_s: int
) -> list[tuple[float, int]]:
    """A queue shrinking by `net_per_s` a second down to `steady`, sampled at 10 Hz."""
    return [
        (tick / 10, max(steady, backlog - net_per_s * tick // 10))
        for tick in range(until_s * 10)
    ]


def test_the_backlog_is_gone_when_the_queue_is_back_to_steady_flow() -> None:
    trace = _draining(600, 20, steady=8, until_s=45)
    assert steady_level(trace, 10) == 8
    assert drained_at(trace, 10, most_in_flight=80) == 29.6  # (600 - 8) / 20


def test_one_spike_in_steady_flow_does_not_set_the_level() -> None:
    trace = _draining(600, 20, steady=8, until_s=45)
    trace[-5] = (trace[-5][0], 70)
    assert steady_level(trace, 10) == 8


def test_a_run_that_never_reached_steady_flow_has_no_drain_time() -> None:
    trace = _draining(600, 5, steady=8, until_s=45)  # still 375 queued at the end
    assert drained_at(trace, 10, most_in_flight=80) is None


def test_the_earlier_bound_is_one_second_of_arrivals() -> None:
    trace = _draining(600, 20, steady=8, until_s=45)
    assert first_at_most(trace, 80) == 26.0
    assert first_at_most(trace, 7) is None
