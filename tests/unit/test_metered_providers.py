"""The provider ports, timed: each call's outcome class on club_provider_call_seconds,
and the classes a unit of work met, even across the thread a job runs in."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY

from adapters.providers.metered import (
    MeteredEmailProvider,
    failures_seen,
    retry_class,
)
from application.email import (
    DeliveryStatus,
    OutcomeUnknownError,
    OutgoingEmail,
    PermanentSendError,
    SendResult,
    TransientSendError,
)

MESSAGE = OutgoingEmail(to="a@example.org", subject="s", body="b")


class Scripted:
    """An e-mail provider that raises what it is told to, once per call."""

    def __init__(self, *errors: Exception | None) -> None:
        self._errors = list(errors)

    def send(self, message: OutgoingEmail, idempotency_key: str) -> SendResult:
        error = self._errors.pop(0)
        if error is not None:
            raise error
        return SendResult(provider_id="p1", replayed=False)

    def status(self, idempotency_key: str) -> DeliveryStatus:
        return DeliveryStatus.ACCEPTED


def calls(outcome: str) -> float:
    value = REGISTRY.get_sample_value(
        "club_provider_call_seconds_count", {"provider": "email", "outcome": outcome}
    )
    return value or 0.0


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (None, "ok"),
        (TransientSendError("refused"), "transient"),
        (OutcomeUnknownError("read timeout"), "unknown"),
        (PermanentSendError("no such address"), "permanent"),
        (RuntimeError("a bug in the adapter"), "unknown"),
    ],
)
def test_each_call_is_timed_under_its_outcome_class(
    error: Exception | None, outcome: str
) -> None:
    provider = MeteredEmailProvider(Scripted(error))
    before = calls(outcome)
    if error is None:
        assert provider.send(MESSAGE, "k1").provider_id == "p1"
    else:
        with pytest.raises(type(error)):
            provider.send(MESSAGE, "k1")
    assert calls(outcome) == before + 1


def test_a_job_sees_the_failures_its_thread_met() -> None:
    provider = MeteredEmailProvider(
        Scripted(TransientSendError("refused"), OutcomeUnknownError("lost"))
    )

    def job() -> None:
        for _ in range(2):
            with pytest.raises((TransientSendError, OutcomeUnknownError)):
                provider.send(MESSAGE, "k1")

    async def unit_of_work() -> list[str]:
        with failures_seen() as seen:
            await asyncio.to_thread(job)
        return seen

    assert asyncio.run(unit_of_work()) == ["transient", "unknown"]


def test_outside_a_unit_of_work_nothing_is_collected() -> None:
    provider = MeteredEmailProvider(Scripted(TransientSendError("refused")))
    with failures_seen() as seen:
        pass
    with pytest.raises(TransientSendError):
        provider.send(MESSAGE, "k1")
    assert seen == []


def test_a_retry_takes_the_class_of_its_last_retryable_failure() -> None:
    assert retry_class(["transient", "unknown"]) == "unknown"
    assert retry_class(["unknown", "transient"]) == "transient"
    assert retry_class(["unknown", "permanent"]) == "unknown"
    assert retry_class([]) == "transient"  # the job's own reason: a file, a race
