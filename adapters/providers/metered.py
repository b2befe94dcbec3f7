"""The provider ports, timed: every call's latency and outcome class on
`club_provider_call_seconds`, whichever adapter (HTTP, SMTP, a test's) is inside.

The class is the one the application already acts on (the exception the port
raised), so the metric and the retry decision can never disagree. A unit of work
(a worker's job, a saga step) may also ask which failure classes its calls met
(`failures_seen`): a job that answers "retry" says why only in words, and the
retry counter needs the class.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from adapters.metrics import PROVIDER_CALL
from application.email import (
    DeliveryStatus,
    OutcomeUnknownError,
    OutgoingEmail,
    PermanentSendError,
    SendResult,
    TransientSendError,
)
from application.payment import (
    Payment,
    PaymentOutcomeUnknownError,
    PaymentStatus,
    PermanentPaymentError,
    Refund,
    RefundStatus,
    TransientPaymentError,
)
from application.ports import EmailProvider, PaymentProvider

T = TypeVar("T")
TRANSIENT = "transient"
UNKNOWN = "unknown"
PERMANENT = "permanent"
CLASSES: dict[type[Exception], str] = {
    TransientSendError: TRANSIENT,
    TransientPaymentError: TRANSIENT,
    OutcomeUnknownError: UNKNOWN,
    PaymentOutcomeUnknownError: UNKNOWN,
    PermanentSendError: PERMANENT,
    PermanentPaymentError: PERMANENT,  # a decline too: the provider said no
}

# A list per unit of work, shared with the threads it starts: asyncio.to_thread
# copies the context, so the thread appends to the same list the task reads.
_seen: ContextVar[list[str] | None] = ContextVar("provider_failures", default=None)


@contextmanager
def failures_seen() -> Iterator[list[str]]:
    """The failure classes the provider calls inside this block met, in order."""
    seen: list[str] = []
    token = _seen.set(seen)
    try:
        yield seen
    finally:
        _seen.reset(token)


def error_class(error: BaseException) -> str:
    for kind, name in CLASSES.items():
        if isinstance(error, kind):
            return name
    return UNKNOWN  # a bug in the adapter: nobody knows what the provider did


def retry_class(seen: list[str]) -> str:
    """The class of a retry a job asked for: its last provider failure that is
    worth a retry; none (a file to write again, a race) is transient by the job's
    own judgement, or it would have given up."""
    retried = [kind for kind in seen if kind in (TRANSIENT, UNKNOWN)]
    return retried[-1] if retried else TRANSIENT


def _timed(provider: str, call: Callable[[], T]) -> T:
    started = time.perf_counter()
    outcome = "ok"
    try:
        return call()
    except Exception as error:
        outcome = error_class(error)
        seen = _seen.get()
        if seen is not None:
            seen.append(outcome)
        raise
    finally:
        elapsed = time.perf_counter() - started
        PROVIDER_CALL.labels(provider=provider, outcome=outcome).observe(elapsed)


class MeteredEmailProvider:
    def __init__(self, inner: EmailProvider) -> None:
        self._inner = inner

    def send(self, message: OutgoingEmail, idempotency_key: str) -> SendResult:
        return _timed("email", lambda: self._inner.send(message, idempotency_key))

    def status(self, idempotency_key: str) -> DeliveryStatus:
        return _timed("email", lambda: self._inner.status(idempotency_key))


class MeteredPaymentProvider:
    def __init__(self, inner: PaymentProvider) -> None:
        self._inner = inner

    def charge(
        self, reference: str, amount_cents: int, idempotency_key: str
    ) -> Payment:
        return _timed(
            "payment",
            lambda: self._inner.charge(reference, amount_cents, idempotency_key),
        )

    def status(self, idempotency_key: str) -> PaymentStatus:
        return _timed("payment", lambda: self._inner.status(idempotency_key))

    def refund(
        self, payment_id: str, amount_cents: int, idempotency_key: str
    ) -> Refund:
        return _timed(
            "payment",
            lambda: self._inner.refund(payment_id, amount_cents, idempotency_key),
        )

    def refund_status(self, idempotency_key: str) -> RefundStatus:
        return _timed("payment", lambda: self._inner.refund_status(idempotency_key))
