"""The payment provider's values: charges, refunds, lookups, and how failures rank.

As with e-mail (`application.email`), adapters only report *what happened* (an HTTP
status, a decline reason, how far a request got); the functions here decide, in one
place, which class that is, because the saga's next step depends on it:

- `PermanentPaymentError`: refused for good (a decline, a 4xx); retrying cannot help.
  `PaymentDeclinedError` is the decline, with the provider's reason.
- `TransientPaymentError`: nothing was accepted; retry later (`retry_after` is the
  provider's own hint).
- `PaymentOutcomeUnknownError`: the request left and no answer came back; money may
  have moved. Look the key up (`status`, `refund_status`) before anything else.

The webhooks the provider sends, and their signatures, are in
`application.payment_webhook` (re-exported here).
"""

from __future__ import annotations

import enum

import attrs

from application.email import MAX_KEY_LENGTH, Stage, check_key
from application.payment_amount import MAX_AMOUNT_CENTS, check_amount
from application.payment_webhook import (
    SIGNATURE_HEADER,
    SIGNATURE_TOLERANCE_S,
    Webhook,
    WebhookType,
    sign,
    verify_signature,
)

# Re-exported: the port's users import one module.
__all__ = [
    "MAX_AMOUNT_CENTS", "MAX_KEY_LENGTH", "SIGNATURE_HEADER", "SIGNATURE_TOLERANCE_S",
    "Stage", "Webhook", "WebhookType", "check_amount", "check_key", "sign",
    "verify_signature",
]  # fmt: skip


class PaymentStatus(enum.Enum):
    PENDING = "pending"  # accepted; the money has not moved yet
    CAPTURED = "captured"
    DECLINED = "declined"
    NOT_FOUND = "not-found"  # the provider checked: nothing under this key


class RefundStatus(enum.Enum):
    PENDING = "pending"  # accepted; the provider confirms by webhook
    SUCCEEDED = "succeeded"
    NOT_FOUND = "not-found"


@attrs.frozen(kw_only=True)
class Payment:
    """A charge the provider holds (now, or on an earlier try: `replayed`)."""

    payment_id: str
    status: PaymentStatus
    amount_cents: int
    replayed: bool = False


@attrs.frozen(kw_only=True)
class Refund:
    refund_id: str
    payment_id: str
    status: RefundStatus
    amount_cents: int
    replayed: bool = False


class PaymentError(Exception):
    """A call did not end in a known answer; the subclass says what to do."""


class PermanentPaymentError(PaymentError):
    """Refused for good: retrying the same request cannot help."""


class PaymentDeclinedError(PermanentPaymentError):
    def __init__(self, reason: str, payment_id: str | None = None) -> None:
        super().__init__(f"payment declined: {reason}")
        self.decline_reason = reason
        self.payment_id = payment_id


class TransientPaymentError(PaymentError):
    """Nothing was accepted; try again, not before `retry_after` seconds."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class PaymentOutcomeUnknownError(PaymentError):
    """The request left and no answer came: look the key up before anything else."""


REQUEST_TIMEOUT = 408
KEY_IN_FLIGHT = 409  # IETF Idempotency-Key draft: a request with this key is running
TOO_MANY_REQUESTS = 429
PAYMENT_REQUIRED = 402  # what providers answer for a declined card


def classify_http_status(
    status: int,
    detail: str,
    retry_after: float | None = None,
    *,
    decline_reason: str | None = None,
    payment_id: str | None = None,
) -> PaymentError:
    """The class of an HTTP answer that is not a 2xx."""
    reason = f"provider answered {status}: {detail}"
    if status in (REQUEST_TIMEOUT, TOO_MANY_REQUESTS) or status >= 500:  # noqa: PLR2004
        return TransientPaymentError(reason, retry_after)
    if status == KEY_IN_FLIGHT:  # an earlier try may be charging right now
        return PaymentOutcomeUnknownError(reason)
    if status == PAYMENT_REQUIRED:
        return PaymentDeclinedError(decline_reason or detail, payment_id)
    return PermanentPaymentError(reason)


def classify_transport(stage: Stage, detail: str) -> PaymentError:
    """Only a failure before anything left is safe to retry blindly."""
    if stage is Stage.NOT_SENT:
        return TransientPaymentError(f"provider not reached: {detail}")
    return PaymentOutcomeUnknownError(f"no answer after the request left: {detail}")
