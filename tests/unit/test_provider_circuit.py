"""The provider circuit's choices as a table: (row, heard) -> the row written.

`change` is pure, so each row is one call on the database's clock `NOW`; the
adapter (adapters/postgres/provider_circuits.py) writes its answer by
compare-and-set, tested with two worker processes in
tests/integration/test_provider_circuit.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from application.provider_circuit import (
    CLOSED,
    Admission,
    CircuitPolicy,
    CircuitState,
    CircuitView,
    Heard,
    admission,
    change,
)

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 2, 1, 0, tzinfo=UTC)
POLICY = CircuitPolicy(failures_to_open=3, probe_every_s=10)
LATER = NOW + timedelta(seconds=10)
EARLIER = NOW - timedelta(minutes=5)


def closed(failures: int = 0, version: int = 4) -> CircuitState:
    return CircuitState(failures=failures, version=version, last_error=None)


def opened(probe_at: datetime, failures: int = 3, version: int = 4) -> CircuitState:
    return CircuitState(
        failures=failures,
        opened_at=EARLIER,
        next_probe_at=probe_at,
        last_error="503",
        version=version,
    )


CHANGES = [
    # closed: failures in a row count up, the bound opens it with a probe ahead
    (closed(0), Heard.FAILED, CircuitState(failures=1, last_error="503", version=5)),
    (closed(1), Heard.FAILED, CircuitState(failures=2, last_error="503", version=5)),
    (
        closed(2),
        Heard.FAILED,
        CircuitState(
            failures=3, opened_at=NOW, next_probe_at=LATER, last_error="503", version=5
        ),
    ),
    # an answer (accepted or refused) resets the count; none to reset: no write
    (closed(2), Heard.ANSWERED, CircuitState(version=5)),
    (closed(0), Heard.ANSWERED, None),
    # open: a probe is claimed once when due (the next one pushed out), not before
    (opened(NOW), Heard.PROBE_CLAIMED, opened(LATER, version=5)),
    (opened(EARLIER), Heard.PROBE_CLAIMED, opened(LATER, version=5)),
    (opened(LATER), Heard.PROBE_CLAIMED, None),
    (closed(0), Heard.PROBE_CLAIMED, None),
    # the probe: an answer closes it; a failure counts and keeps it open
    (opened(LATER), Heard.PROBE_ANSWERED, CircuitState(version=5)),
    (opened(LATER), Heard.PROBE_FAILED, opened(LATER, failures=4, version=5)),
    (closed(1), Heard.PROBE_FAILED, None),
    # a message in hand failing while open: still open, not a probe's count
    (opened(LATER), Heard.FAILED, opened(LATER, version=5)),
    # any answer while open (a message in hand was accepted): it is back
    (opened(LATER), Heard.ANSWERED, CircuitState(version=5)),
]


@pytest.mark.parametrize(("state", "heard", "written"), CHANGES)
def test_change(
    state: CircuitState, heard: Heard, written: CircuitState | None
) -> None:
    assert change(state, heard, now=NOW, policy=POLICY, error="503") == written


ADMISSIONS = [
    (CLOSED, Admission.TAKE),
    (closed(2), Admission.TAKE),  # failures below the bound: still taking
    (opened(LATER), Admission.WAIT),
    (opened(NOW), Admission.PROBE),
    (opened(EARLIER), Admission.PROBE),
]


@pytest.mark.parametrize(("state", "admitted"), ADMISSIONS)
def test_admission(state: CircuitState, admitted: Admission) -> None:
    assert admission(state, now=NOW) is admitted


def test_the_line_says_since_when_how_many_wait_and_the_next_probe() -> None:
    view = CircuitView(provider="email", state=opened(LATER), now=NOW)
    assert view.line(20) == (
        "e-mail provider down since 2026-12-02 00:55:00Z (300 s), 20 waiting, "
        "next probe at 01:00:10Z, last: 503"
    )
    up = CircuitView(provider="email", state=CLOSED, now=NOW)
    assert up.line(0) == "e-mail provider up (circuit closed)"
