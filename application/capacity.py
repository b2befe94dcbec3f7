"""The capacity model: how long a queue takes to drain, and what a promise is worth.

docs/background.md §33: a queue stores the intent to do work; it adds no capacity. With
a backlog
of N items, A arriving and S served per second (constant rates, one class of work,
first in first out), the last queued item waits N / S, and the backlog is gone after
N / (S - A) — or never, when A >= S. The seed's numbers:

>>> plan(backlog=6000, arrival_rate=0, service_rate=100).drain_seconds
60.0
>>> plan(backlog=6000, arrival_rate=80, service_rate=100).drain_seconds
300.0
>>> plan(backlog=6000, arrival_rate=80, service_rate=100).last_queued_wait_seconds
60.0
>>> plan(backlog=10, arrival_rate=100, service_rate=100).drains
False
>>> verdict(eta_seconds=12.5, promise_seconds=10, drains=True)
'late by 2.5 s'
>>> verdict(eta_seconds=3, promise_seconds=10, drains=True)
'on time'
>>> verdict(eta_seconds=3, promise_seconds=10, drains=False)
'never drains'
"""

from __future__ import annotations

import math

import attrs


class CapacityInputError(ValueError):
    """A rate or a backlog the model cannot use; the message names which and why."""


@attrs.frozen(kw_only=True)
class Plan:
    backlog: float
    arrival_rate: float
    service_rate: float

    @property
    def drains(self) -> bool:
        """Only a service faster than the arrivals pays the backlog off."""
        return self.arrival_rate < self.service_rate

    @property
    def drain_seconds(self) -> float:
        """Until the queue is empty; infinite when it never drains."""
        if not self.drains:
            return math.inf
        return self.backlog / (self.service_rate - self.arrival_rate)

    @property
    def last_queued_wait_seconds(self) -> float:
        """The wait of the item queued last now (first in first out): later
        arrivals queue behind it, so only the backlog ahead of it counts."""
        return self.backlog / self.service_rate

    def explain(self) -> str:
        """One paragraph for people, the numbers and what they mean."""
        n, a, s = (
            _shown(self.backlog),
            _shown(self.arrival_rate),
            _shown(self.service_rate),
        )
        wait = _shown(self.last_queued_wait_seconds)
        head = (
            f"{n} items are queued; {a}/s arrive and {s}/s are served. "
            f"The last item queued now waits {wait} s ({n} / {s})."
        )
        if not self.drains:
            grows = _shown(self.arrival_rate - self.service_rate)
            return (
                f"{head} The queue NEVER DRAINS: arrivals ({a}/s) are not slower "
                f"than service ({s}/s), so the backlog stays or grows by {grows}/s "
                "until service is raised above the arrival rate or arrivals stop."
            )
        net = _shown(self.service_rate - self.arrival_rate)
        return (
            f"{head} The backlog shrinks by only {net}/s ({s} - {a}), so it is gone "
            f"after {_shown(self.drain_seconds)} s ({n} / {net}), at constant rates, "
            "with no retries and equal work per item."
        )


def plan(*, backlog: float, arrival_rate: float, service_rate: float) -> Plan:
    """Checked inputs: finite, not negative, and a service rate above zero."""
    for name, value in (
        ("backlog", backlog),
        ("arrival rate", arrival_rate),
        ("service rate", service_rate),
    ):
        if not math.isfinite(value):
            raise CapacityInputError(f"the {name} must be a finite number, not {value}")
        if value < 0:
            raise CapacityInputError(f"the {name} cannot be negative ({value})")
    if service_rate == 0:
        msg = "the service rate must be above 0: with no service nothing ever drains"
        raise CapacityInputError(msg)
    return Plan(backlog=backlog, arrival_rate=arrival_rate, service_rate=service_rate)


def verdict(*, eta_seconds: float, promise_seconds: float, drains: bool) -> str:
    """The delivery time against the promise, in plain words."""
    if not drains:
        return "never drains"
    if eta_seconds <= promise_seconds:
        return "on time"
    return f"late by {_shown(eta_seconds - promise_seconds)} s"


def _shown(value: float) -> str:
    """Whole numbers without a fraction, others to one decimal place.

    >>> _shown(60.0), _shown(2.46), _shown(-20.0)
    ('60', '2.5', '-20')
    """
    rounded = round(value, 1)
    return str(int(rounded)) if rounded == int(rounded) else f"{rounded:.1f}"
