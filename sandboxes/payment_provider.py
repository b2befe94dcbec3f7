"""What the payment sandbox does with a charge or a refund, apart from HTTP routing:
the knobs, the idempotency record, the rate limit, settling, and which webhook each
change of state queues."""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote
from uuid import uuid4

from fastapi.responses import JSONResponse, Response
from starlette.types import Scope

from application.payment import Webhook, WebhookType
from entrypoints.http.problems import problem
from sandboxes.drop import mark_dropped
from sandboxes.knobs import KnobBoard
from sandboxes.payment_knobs import PAYMENT_KNOBS
from sandboxes.payment_outbox import OutgoingWebhook
from sandboxes.payment_request import ChargeRequest, RefundRequest
from sandboxes.payment_store import PaymentStore, StoredPayment, StoredRefund
from sandboxes.rate_limit import WINDOW_S, SlidingWindow, retry_after_header

DECLINE_REASON = "card_declined"


class PaymentSandbox:
    def __init__(
        self, data_dir: Path, knobs: Mapping[str, object], clock: Callable[[], float]
    ) -> None:
        """Raises `KnobError` for a bad knob, before anything listens."""
        self.knobs = KnobBoard(PAYMENT_KNOBS, knobs)
        self.store = PaymentStore(data_dir)
        self.clock = clock
        # The limit holds across a restart too: the last second's acceptances count.
        self._window = SlidingWindow(self.store.accepted_since(clock() - WINDOW_S))
        self._dice = random.Random()  # noqa: S311 - fault injection, not secrets
        self._new_charges = 0  # since this process started, for decline_every

    async def refusal(self, *, refunds: bool = False) -> Response | None:
        """What `down`, `refunds_down` and `latency_ms` do to every provider call."""
        if self.knobs["down"]:
            return problem(503, "provider-down", "Provider down", "knob down=true")
        if refunds and self.knobs["refunds_down"]:
            return problem(
                503, "refunds-down", "Refunds unavailable", "knob refunds_down=true"
            )
        if self.knobs["latency_ms"]:
            await asyncio.sleep(self.knobs["latency_ms"] / 1000)
        return None

    # --- charges --------------------------------------------------------------

    def charge(self, scope: Scope, wanted: ChargeRequest) -> Response:
        if failure := self._injected_failure():
            return failure
        first = self.store.payment_by_key(wanted.key)
        if first is not None:
            if first.fingerprint != wanted.fingerprint:
                return _key_reused()
            return self._answer_payment(scope, first, replayed=True)
        if limited := self._rate_limited():
            return limited
        now = self.clock()
        self._new_charges += 1
        every = self.knobs["decline_every"]
        declined = self._dice.random() < self.knobs["decline_rate"] or (
            every > 0 and self._new_charges % every == 0
        )
        delay = self.knobs["settle_delay_ms"] / 1000
        settled_now = declined or delay == 0
        status = "declined" if declined else "captured" if settled_now else "pending"
        payment = self.store.add_payment(
            key=wanted.key, fingerprint=wanted.fingerprint, reference=wanted.reference,
            amount_cents=wanted.amount_cents,
            status=status,
            decline_reason=DECLINE_REASON if declined else None, now=now,
            settle_at=None if settled_now else now + delay,
            webhook=self._payment_webhook if settled_now else None,
            payment_id=hostile_id(self.knobs["hostile_id_length"]),
        )  # fmt: skip
        self._window.record(now)
        return self._answer_payment(scope, payment, replayed=False)

    def payment_json(self, payment: StoredPayment) -> dict[str, object]:
        refunds = self.store.refunds_of(payment.id)
        return {
            "id": payment.id,
            "idempotency_key": payment.idempotency_key,
            "reference": payment.reference,
            "amount_cents": payment.amount_cents,
            "status": payment.status,
            "decline_reason": payment.decline_reason,
            "created_at": _iso(payment.created_at),
            "settled_at": _iso(payment.settled_at),
            "refunded_cents": sum(r.amount_cents for r in refunds),
            "refunds": [refund_json(r) for r in refunds],
        }

    def _answer_payment(
        self, scope: Scope, payment: StoredPayment, *, replayed: bool
    ) -> Response:
        self._maybe_drop(scope)
        headers = {
            "Location": f"/payments/{quote(payment.idempotency_key, safe='')}",
            "Idempotent-Replayed": "true" if replayed else "false",
        }
        if payment.status == "declined":
            return problem(
                402, "payment-declined", "Payment declined",
                f"the card was declined: {payment.decline_reason}", headers=headers,
                payment_id=payment.id, decline_reason=payment.decline_reason,
            )  # fmt: skip
        return JSONResponse(
            self.payment_json(payment), status_code=201, headers=headers
        )

    # --- refunds --------------------------------------------------------------

    def refund(self, scope: Scope, wanted: RefundRequest) -> Response:
        if failure := self._injected_failure():
            return failure
        first = self.store.refund_by_key(wanted.key)
        if first is not None:
            if first.fingerprint != wanted.fingerprint:
                return _key_reused()
            return self._answer_refund(scope, first, replayed=True)
        payment = self._refundable(wanted)
        if isinstance(payment, Response):
            return payment
        if limited := self._rate_limited():
            return limited
        now = self.clock()
        delay = self.knobs["settle_delay_ms"] / 1000
        refund = self.store.add_refund(
            key=wanted.key, fingerprint=wanted.fingerprint, payment_id=payment.id,
            amount_cents=wanted.amount_cents, now=now,
            settle_at=now + delay if delay else None,
            webhook=None if delay else self._refund_webhook,
        )  # fmt: skip
        self._window.record(now)
        return self._answer_refund(scope, refund, replayed=False)

    def _refundable(self, wanted: RefundRequest) -> StoredPayment | Response:
        """The payment to refund, or the answer that refuses it."""
        payment = self.store.payment_by_id(wanted.payment_id)
        if payment is None:
            return problem(
                404, "payment-not-found", "Payment not found",
                f"no payment {wanted.payment_id!r}",
            )  # fmt: skip
        if payment.status != "captured":
            return problem(
                422, "payment-not-captured", "Payment not captured",
                f"only a captured payment is refunded; this one is {payment.status}",
            )  # fmt: skip
        left = payment.amount_cents - sum(
            r.amount_cents for r in self.store.refunds_of(payment.id)
        )
        if wanted.amount_cents > left:
            return problem(
                422, "refund-exceeds-payment", "Refund exceeds the payment",
                f"{left} cents are left to refund on {payment.id}",
            )  # fmt: skip
        return payment

    def _answer_refund(
        self, scope: Scope, refund: StoredRefund, *, replayed: bool
    ) -> Response:
        self._maybe_drop(scope)
        return JSONResponse(
            refund_json(refund),
            status_code=201,
            headers={
                "Location": f"/refunds/{quote(refund.idempotency_key, safe='')}",
                "Idempotent-Replayed": "true" if replayed else "false",
            },
        )

    # --- settling: the short delay after which money moves -------------------------

    def settle_due(self) -> None:
        now = self.clock()
        for payment in self.store.due_payments(now):
            self.store.settle(
                "payments", payment.id, "captured", now,
                self._payment_webhook(payment, WebhookType.PAYMENT_CAPTURED),
            )  # fmt: skip
        for refund in self.store.due_refunds(now):
            self.store.settle(
                "refunds", refund.id, "succeeded", now, self._refund_webhook(refund)
            )

    def _payment_webhook(
        self, payment: StoredPayment, kind: WebhookType | None = None
    ) -> OutgoingWebhook:
        if kind is None:  # settled at once: the stored status says which
            declined = payment.status == "declined"
            kind = (
                WebhookType.PAYMENT_DECLINED
                if declined
                else WebhookType.PAYMENT_CAPTURED
            )
        return self._webhook(kind, payment, None)

    def _refund_webhook(self, refund: StoredRefund) -> OutgoingWebhook:
        payment = self.store.payment_by_id(refund.payment_id)
        if payment is None:  # refunds are only made of stored payments
            raise RuntimeError(f"refund {refund.id} of an unknown payment")
        return self._webhook(WebhookType.REFUND_SUCCEEDED, payment, refund)

    def _webhook(
        self, kind: WebhookType, payment: StoredPayment, refund: StoredRefund | None
    ) -> OutgoingWebhook:
        now = self.clock()
        webhook = Webhook(
            event_id=f"evt_{uuid4().hex}", type=kind, payment_id=payment.id,
            idempotency_key=payment.idempotency_key, reference=payment.reference,
            amount_cents=refund.amount_cents if refund else payment.amount_cents,
            occurred_at=datetime.fromtimestamp(now, UTC),
            refund_id=refund.id if refund else None,
        )  # fmt: skip
        due_at = now + self.knobs["webhook_delay_ms"] / 1000
        return OutgoingWebhook(
            event_id=webhook.event_id, body=webhook.to_json(), due_at=due_at
        )

    # --- knobs shared by charges and refunds ----------------------------------

    def _injected_failure(self) -> Response | None:
        if self._dice.random() >= self.knobs["fail_rate"]:
            return None
        status = self.knobs["fail_status"]
        return problem(
            status, "injected-failure", "Injected failure",
            f"knob fail_rate: answered {status} and accepted nothing",
        )  # fmt: skip

    def _rate_limited(self) -> Response | None:
        # Synchronous from this check to the commit: no other request interleaves.
        limit = self.knobs["rate_limit_per_s"]
        wait = self._window.wait_before(self.clock(), limit)
        if wait <= 0:
            return None
        return problem(
            429, "rate-limited", "Too Many Requests",
            f"the limit is {limit} accepted requests per second",
            headers={"Retry-After": retry_after_header(wait)},
            retry_after_ms=math.ceil(wait * 1000),
        )  # fmt: skip

    def _maybe_drop(self, scope: Scope) -> None:
        if self._dice.random() < self.knobs["drop_rate"]:
            mark_dropped(scope)  # stored already; only the reply is lost


def hostile_id(length: int) -> str | None:
    """A payment id of `length` characters with a space and non-ASCII letters, as
    a provider may send (None: the sandbox's own `pay_<hex>`)."""
    if length <= 0:
        return None
    unique = f"pay ü {uuid4().hex}"
    return (unique + "é" * max(0, length - len(unique)))[: max(length, len(unique))]


def refund_json(refund: StoredRefund) -> dict[str, object]:
    return {
        "id": refund.id,
        "idempotency_key": refund.idempotency_key,
        "payment_id": refund.payment_id,
        "amount_cents": refund.amount_cents,
        "status": refund.status,
        "created_at": _iso(refund.created_at),
        "settled_at": _iso(refund.settled_at),
    }


def _key_reused() -> Response:
    return problem(
        422, "idempotency-key-reused", "Idempotency-Key reused",
        "this key was used with another request; use a new key",
    )  # fmt: skip


def _iso(at: float | None) -> str | None:
    return None if at is None else datetime.fromtimestamp(at, UTC).isoformat()
