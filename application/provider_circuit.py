"""When a provider fails for everyone, its work class waits instead of spending
attempts: the circuit's choices, with nothing but data in and out.

One circuit per provider is shared by every worker process (its state is one
row, changed only by compare-and-set, judged on the database's clock). It is

    closed --N transient failures in a row--> open --a probe answered--> closed
       ^-- any answer (accepted, refused) resets the count

While it is open no slot takes a message; one process at a time claims the probe
(a status lookup, which costs no message an attempt), at most one per
`probe_every_s`. `change` folds one thing heard into the state; `admission` says
what a slot may do now. The adapter reads, asks, and writes the result only if
the row has not moved meanwhile.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime, timedelta

import attrs


@attrs.frozen(kw_only=True)
class CircuitPolicy:
    failures_to_open: int = 5  # transient failures in a row, across processes
    probe_every_s: float = 10.0  # the bounded rate of probes while open


@attrs.frozen(kw_only=True)
class CircuitState:
    """The shared row as read; `version` is what a compare-and-set expects."""

    failures: int = 0  # transient failures in a row (closed) or failed probes (open)
    opened_at: datetime | None = None  # None: closed
    next_probe_at: datetime | None = None  # open: not before this
    last_error: str | None = None
    version: int = 0

    @property
    def open(self) -> bool:
        return self.opened_at is not None


CLOSED = CircuitState()


class Heard(enum.Enum):
    FAILED = "failed"  # nothing accepted, for a reason not this message's
    ANSWERED = "answered"  # the provider answered (accepted or refused): it is up
    PROBE_CLAIMED = "probe-claimed"  # this process takes the next probe
    PROBE_FAILED = "probe-failed"
    PROBE_ANSWERED = "probe-answered"


def change(
    state: CircuitState,
    heard: Heard,
    *,
    now: datetime,
    policy: CircuitPolicy,
    error: str | None = None,
) -> CircuitState | None:
    """The state after `heard`, or None: nothing to write (the row stays)."""
    if heard is Heard.ANSWERED or heard is Heard.PROBE_ANSWERED:
        if state.failures == 0 and not state.open:
            return None  # the common case writes nothing
        return _next(state, CLOSED)
    if heard is Heard.PROBE_CLAIMED:
        if admission(state, now=now) is not Admission.PROBE:
            return None  # another process claimed it first, or none is due
        later = now + timedelta(seconds=policy.probe_every_s)
        return _next(state, attrs.evolve(state, next_probe_at=later))
    if heard is Heard.PROBE_FAILED and not state.open:
        return None  # closed meanwhile by an answer elsewhere
    return _next(state, _failed(state, heard, now, policy, error))


def _failed(
    state: CircuitState,
    heard: Heard,
    now: datetime,
    policy: CircuitPolicy,
    error: str | None,
) -> CircuitState:
    """One more failure in a row; the one that reaches the bound opens it. While
    open, a failed probe is counted and a message's failure only noted."""
    failures = state.failures + 1
    if state.open:
        counted = failures if heard is Heard.PROBE_FAILED else state.failures
        return attrs.evolve(state, failures=counted, last_error=error)
    if failures < policy.failures_to_open:
        return attrs.evolve(state, failures=failures, last_error=error)
    return CircuitState(
        failures=failures,
        opened_at=now,
        next_probe_at=now + timedelta(seconds=policy.probe_every_s),
        last_error=error,
    )


class Admission(enum.Enum):
    TAKE = "take"  # closed: slots take messages
    PROBE = "probe"  # open, and a probe is due: claim it
    WAIT = "wait"  # open: take nothing until the next probe


def admission(state: CircuitState, *, now: datetime) -> Admission:
    if not state.open:
        return Admission.TAKE
    if state.next_probe_at is None or state.next_probe_at <= now:
        return Admission.PROBE
    return Admission.WAIT


def _next(old: CircuitState, new: CircuitState) -> CircuitState:
    return attrs.evolve(new, version=old.version + 1)


@attrs.frozen(kw_only=True)
class CircuitView:
    """One provider's circuit as the console shows it."""

    provider: str
    state: CircuitState
    now: datetime  # the database's clock at the read

    def line(self, waiting: int | None) -> str:
        """ "e-mail provider down since …, N waiting, next probe at …", or
        that it is up."""
        name = PROVIDER_NAMES.get(self.provider, self.provider)
        opened, probe = self.state.opened_at, self.state.next_probe_at
        if opened is None:
            return f"{name} provider up (circuit closed)"
        down_for = (self.now - opened).total_seconds()
        parts = [
            f"{name} provider down since {opened.astimezone(UTC):%Y-%m-%d %H:%M:%S}Z "
            f"({down_for:.0f} s)",
            f"{'?' if waiting is None else waiting} waiting",
        ]
        if probe is not None:
            parts.append(f"next probe at {probe.astimezone(UTC):%H:%M:%S}Z")
        if self.state.last_error:
            parts.append(f"last: {self.state.last_error}")
        return ", ".join(parts)


PROVIDER_NAMES = {"email": "e-mail"}


class NoCircuit:
    """A provider without a shared circuit: every failure is the message's own."""

    def failed(self, error: str) -> bool:
        return False

    def answered(self) -> None:
        return None
