"""Every retry's exponential (application/backoff.py): capped, and still a number
after a failure count no outage was expected to reach."""

from adapters.transient import Backoff
from application.backoff import doubled
from application.notifications import RetryPolicy


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
