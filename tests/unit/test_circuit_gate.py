"""The worker's gate on a bad day: our own database failing under it must not end
a slot (a slot task that raised would stop the worker's whole pool)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from adapters.nats.circuit_gate import CircuitGate, _down
from application.email import EmailSendError, PermanentSendError, TransientSendError
from application.provider_circuit import CircuitState, CircuitView

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 2, 1, 0, tzinfo=UTC)
DOWN = psycopg.OperationalError("connection refused")


class DatabaseGoneWhileProbing:
    """An open circuit whose probe is due, and a database that fails the claim."""

    provider = "email"

    def __init__(self) -> None:
        self.view_now = CircuitView(
            provider="email",
            state=CircuitState(
                failures=5, opened_at=NOW, next_probe_at=NOW - timedelta(seconds=1)
            ),
            now=NOW,
        )

    def cached(self) -> CircuitView:
        return self.view_now

    def view(self, **_: object) -> CircuitView:
        return self.view_now

    def claim_probe(self) -> bool:
        raise DOWN


class DatabaseGone(DatabaseGoneWhileProbing):
    def cached(self) -> None:
        return None

    def view(self, **_: object) -> CircuitView:
        raise DOWN


def refused_lookup() -> TransientSendError:
    """As the HTTP adapter raises a lookup refused with a 4xx (401: our key)."""
    try:
        try:
            raise PermanentSendError("provider answered 401")
        except PermanentSendError as refusal:
            raise TransientSendError("status lookup failed") from refusal
    except TransientSendError as error:
        return error


def admits(circuit: object) -> bool:
    gate = CircuitGate(circuit, lambda: None)  # type: ignore[arg-type]

    async def once() -> bool:
        return await gate.admits(asyncio.Event())

    return asyncio.run(once())


def test_a_claim_that_fails_on_our_database_waits_instead_of_raising() -> None:
    assert admits(DatabaseGoneWhileProbing()) is False


def test_an_unreadable_circuit_lets_the_job_meet_our_outage_itself() -> None:
    # The worker's own outage handling (rests, a bounded count) takes it from there.
    assert admits(DatabaseGone()) is True


@pytest.mark.parametrize(
    ("error", "down"),
    [
        (TransientSendError("provider answered 503"), True),
        (TransientSendError("provider not reached: refused"), True),
        (TransientSendError("provider answered 429", 1.0, throttled=True), False),
        (refused_lookup(), False),
    ],
)
def test_a_probe_is_down_only_if_the_provider_did_not_answer(
    error: EmailSendError, down: bool
) -> None:
    assert _down(error) is down
