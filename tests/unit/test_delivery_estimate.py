"""The notification queue's delivery estimate: the capacity model fed with the
measured throughput, and what that throughput can and cannot say."""

from __future__ import annotations

import math

from adapters.nats.chain_lags import ConsumerHop
from adapters.postgres.chain_counts import Rates
from entrypoints.ops.chain_status import _delivery

PROMISE_S = 10.0
CONFIGURED_S = 100.0


def hop(pending: int, oldest: float | None) -> ConsumerHop:
    return ConsumerHop(
        consumer="notifications",
        exists=True,
        num_pending=pending,
        num_ack_pending=0,
        redelivered=0,
        waiting_pulls=1,
        oldest_age_seconds=oldest,
    )


def rates(arrived: int, done: int) -> Rates:
    return Rates(window_seconds=60, enrollment_events=arrived, notifications_done=done)


def test_a_queue_that_keeps_up_is_on_time_although_arrivals_equal_throughput():
    """Kept up, throughput equals arrivals: that is no sign of "never drains"."""
    delivery = _delivery(hop(0, None), rates(600, 600), PROMISE_S, CONFIGURED_S)
    assert delivery.drains
    assert delivery.drain_seconds == 0
    assert delivery.verdict == "on time"


def test_the_seed_backlog_after_recovery_is_late_and_drains_in_300_s():
    """6000 queued, 80/s arriving, 100/s served (docs/background.md §33)."""
    delivery = _delivery(hop(6000, 2.0), rates(4800, 6000), PROMISE_S, CONFIGURED_S)
    assert delivery.drain_seconds == 300
    assert delivery.eta_seconds == 60  # the student enrolling now
    assert delivery.verdict == "late by 50 s"


def test_work_waiting_while_arrivals_outrun_the_workers_never_drains():
    delivery = _delivery(hop(500, 3.0), rates(6000, 3000), PROMISE_S, CONFIGURED_S)
    assert not delivery.drains
    assert math.isinf(delivery.drain_seconds)
    assert delivery.verdict == "never drains"


def test_the_oldest_items_age_alone_can_make_it_late():
    """Length without age deceives: three items, but one has waited 42 s."""
    delivery = _delivery(hop(3, 42.0), rates(3, 60), PROMISE_S, CONFIGURED_S)
    assert delivery.verdict == "late by 32 s"


def test_work_waiting_with_nothing_finished_is_stalled_at_the_configured_rate():
    delivery = _delivery(hop(5, 12.0), rates(5, 0), PROMISE_S, CONFIGURED_S)
    assert delivery.stalled
    assert delivery.service_per_s == CONFIGURED_S
    assert delivery.verdict == "late by 2 s"
