"""Every retry's exponential (application/backoff.py): capped, and still a number
after a failure count no outage was expected to reach."""

import random
from datetime import timedelta

import pytest

from adapters import saga_process
from adapters.nats import consumer, worker
from adapters.nats.streams import POISON_ATTEMPTS
from adapters.transient import Backoff
from application import club_store
from application.backoff import BackoffPolicy, Jitter, doubled
from application.notifications import RetryPolicy
from application.saga import SagaPolicy


def test_doubling_is_capped() -> None:
    assert [doubled(0.5, n, 4.0) for n in range(-1, 6)] == [0.5, 0.5, 1, 2, 4, 4, 4]


def test_a_count_past_a_floats_range_is_the_cap_not_an_overflow() -> None:
    # 0.5 * 2**1100 overflows a float: the role waiting out a long outage crashed.
    assert doubled(0.5, 1100, 10.0) == 10.0
    assert doubled(0.5, 10**9, 10.0) == 10.0


def test_a_role_waiting_out_a_long_outage_keeps_its_pause() -> None:
    backoff = Backoff(first=0.2, cap=5.0)
    delays = [backoff.next_delay() for _ in range(2_000)]  # ~2.5 h at the cap
    assert all(2.5 <= d <= 5.0 for d in delays[-100:])


def test_a_retry_policy_of_many_attempts_stays_at_its_cap() -> None:
    policy = RetryPolicy(max_attempts=5_000, first_delay=1.0, max_delay=60.0)
    assert 0 <= policy.delay(4_999) <= 60.0


# The policy type: what each jitter draws, the cap, and a count of any size.

DRAWS = 2_000


def policy(jitter: Jitter, first: float = 1.0, cap: float = 60.0) -> BackoffPolicy:
    return BackoffPolicy(first=first, cap=cap, jitter=jitter)


def test_the_ceiling_doubles_from_the_first_retry_up_to_the_cap() -> None:
    ceilings = [policy(Jitter.NONE).ceiling(n) for n in range(1, 10)]
    assert ceilings == [1, 2, 4, 8, 16, 32, 60, 60, 60]


def test_attempt_zero_or_less_is_the_first_retry() -> None:
    for jitter in Jitter:
        assert policy(jitter).ceiling(0) == policy(jitter).ceiling(1) == 1.0
    assert policy(Jitter.NONE).ceiling(-3) == 1.0
    assert policy(Jitter.NONE).delay(0) == policy(Jitter.NONE).delay(1) == 1.0


def test_a_huge_attempt_is_the_cap_not_an_overflow() -> None:
    for jitter in Jitter:
        assert policy(jitter).ceiling(10**6) == 60.0
        assert 0 <= policy(jitter).delay(10**6, random.Random(3)) <= 60.0
    assert policy(Jitter.NONE).delay(10**6) == 60.0


def test_full_jitter_draws_anywhere_from_zero_to_the_ceiling() -> None:
    rng = random.Random(11)
    draws = [policy(Jitter.FULL).delay(4, rng) for _ in range(DRAWS)]  # ceiling 8
    assert all(0 <= d <= 8.0 for d in draws)
    assert min(draws) < 0.1
    assert max(draws) > 7.9


def test_equal_jitter_draws_from_the_upper_half_only() -> None:
    rng = random.Random(12)
    draws = [policy(Jitter.EQUAL).delay(4, rng) for _ in range(DRAWS)]  # ceiling 8
    assert all(4.0 <= d <= 8.0 for d in draws)
    assert min(draws) < 4.1
    assert max(draws) > 7.9


def test_no_jitter_is_the_ceiling_and_draws_nothing() -> None:
    rng = random.Random(13)
    state = rng.getstate()
    assert [policy(Jitter.NONE).delay(n, rng) for n in range(1, 5)] == [1, 2, 4, 8]
    assert rng.getstate() == state


def test_jitter_stays_under_the_cap() -> None:
    rng = random.Random(14)
    for jitter in Jitter:
        draws = [policy(jitter, cap=5.0).delay(50, rng) for _ in range(DRAWS)]
        assert all(0 <= d <= 5.0 for d in draws)


def test_a_seeded_generator_draws_the_same_delays() -> None:
    one, two = random.Random(5), random.Random(5)
    for jitter in (Jitter.FULL, Jitter.EQUAL):
        assert [policy(jitter).delay(n, one) for n in range(1, 20)] == [
            policy(jitter).delay(n, two) for n in range(1, 20)
        ]


def test_a_negative_delay_is_refused() -> None:
    with pytest.raises(ValueError, match="first"):
        BackoffPolicy(first=-1.0, cap=1.0, jitter=Jitter.NONE)
    with pytest.raises(ValueError, match="cap"):
        BackoffPolicy(first=1.0, cap=-1.0, jitter=Jitter.NONE)


# Each retry's numbers, as they were before it drew through the policy.


def test_a_poison_event_is_redelivered_on_the_consumers_schedule() -> None:
    assert [consumer.POISON_RETRY.delay(n) for n in range(1, 10)] == [
        min(60.0, 1.0 * 2.0 ** (n - 1)) for n in range(1, 10)
    ]


def test_a_failing_job_is_redelivered_on_the_workers_schedule() -> None:
    # Before: 1.0 * 2 ** (delivered - 1), uncapped, for every delivery it NAKs.
    naked = range(1, POISON_ATTEMPTS)
    assert [worker.POISON_RETRY.delay(n) for n in naked] == [
        1.0 * 2 ** (n - 1) for n in naked
    ]
    assert worker.POISON_RETRY.delay(10**6) == 8.0


def test_an_outage_draws_full_jitter_under_one_second_doubling_to_a_minute() -> None:
    retry = worker.Outage().retry
    assert retry.jitter is Jitter.FULL
    assert [retry.ceiling(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]


def test_a_loops_backoff_draws_equal_jitter_from_its_first_pause() -> None:
    backoff = Backoff(first=0.2, cap=5.0)
    for ceiling in (0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0):
        assert ceiling / 2 <= backoff.next_delay() <= ceiling
    backoff.reset()
    assert 0.1 <= backoff.next_delay() <= 0.2


def test_a_failing_saga_step_waits_as_before() -> None:
    # Before: doubled(0.5, failures, 30) times uniform(0.5, 1), failures from 1.
    for failures in range(1, 12):
        assert saga_process.ERROR_RETRY.ceiling(failures) == doubled(
            0.5, failures, saga_process.MAX_ERROR_DELAY_S
        )
    assert saga_process.ERROR_RETRY.jitter is Jitter.EQUAL


def test_a_write_that_lost_a_race_waits_as_before() -> None:
    # Before: uniform(0, min(0.05, 0.001 * 2**attempt)), attempt from 0.
    for attempt in range(12):
        assert club_store.CONFLICT_RETRY.ceiling(attempt + 1) == min(
            0.05, 0.001 * 2**attempt
        )
    assert club_store.CONFLICT_RETRY.jitter is Jitter.FULL


def test_the_sagas_backoff_draws_as_before() -> None:
    # Before: min(ceiling, first * 2**attempt) * rng.uniform(0.5, 1.0).
    first, ceiling = timedelta(seconds=2), timedelta(minutes=5)
    before, after = random.Random(9), random.Random(9)
    for attempt in [*range(12), 10**6]:
        top = min(ceiling, first * 2 ** min(attempt, 20))
        expected = top * before.uniform(0.5, 1.0)
        drawn = SagaPolicy().backoff(attempt, first, ceiling, after)
        assert abs(drawn - expected) <= timedelta(microseconds=1)
