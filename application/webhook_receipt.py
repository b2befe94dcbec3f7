"""The payment webhook's use case: the fact it reports, recorded once per event id.

A verified, parsed webhook's fact is recorded through the purchase's use cases
(which recognise a repeated fact), then its event id is kept with what it did, so a
redelivery is answered from the first. What happens next — access, a refund, an
offer — is the saga's decision.
"""

from __future__ import annotations

import enum
from uuid import UUID

import attrs

from application.errors import NotFoundError
from application.payment_webhook import Webhook, WebhookType
from application.ports import WebhookRecords
from application.purchases import PurchaseUseCases, purchase_id_from_key
from application.saga import CHECK_OWNER
from domain.errors import DomainError


class Handled(enum.Enum):
    """What one delivery of a webhook did."""

    RECORDED = "recorded"  # the purchase took the fact
    REFUSED = "refused"  # the purchase refused it: kept, since a resend cannot help
    NO_SUCH_PURCHASE = "no such purchase"  # the key names no purchase of ours
    DUPLICATE = "duplicate"  # a redelivery: nothing done, the first one's words


@attrs.frozen(kw_only=True)
class WebhookOutcome:
    """`outcome` is the words kept with the event id (the first delivery's for a
    duplicate); `refusal` is the rule's words when the purchase refused the fact."""

    event_id: str
    handled: Handled
    outcome: str
    refusal: str | None = None

    @property
    def duplicate(self) -> bool:
        return self.handled is Handled.DUPLICATE


class WebhookUseCases(PurchaseUseCases):
    """The payment webhook's use case, a method of `ClubApplication`."""

    def receive_webhook(
        self, webhook: Webhook, *, records: WebhookRecords
    ) -> WebhookOutcome:
        """Record the fact a verified webhook reports, once per event id. A fact the
        purchase refuses is kept as the outcome (the provider cannot make it right by
        resending); a key that names no purchase of ours records nothing."""
        first = records.outcome_of(webhook.event_id)
        if first is not None:
            return WebhookOutcome(
                event_id=webhook.event_id, handled=Handled.DUPLICATE, outcome=first
            )
        purchase_id = purchase_id_from_key(webhook.idempotency_key)
        handled, words, refusal = self._record_fact(webhook, purchase_id)
        if handled is Handled.NO_SUCH_PURCHASE:
            purchase_id = None
        stored = records.accept(
            event_id=webhook.event_id,
            type_=webhook.type.value,
            purchase_id=purchase_id,
            outcome=words,
        )
        if stored != words:  # a racing redelivery kept its words first
            return WebhookOutcome(
                event_id=webhook.event_id, handled=Handled.DUPLICATE, outcome=stored
            )
        return WebhookOutcome(
            event_id=webhook.event_id, handled=handled, outcome=words, refusal=refusal
        )

    def review_unusable_webhook(self, idempotency_key: str, reason: str) -> str:
        """A signed webhook about our purchase whose values Club cannot act on: money
        may have moved, so the purchase waits for a person, with the reason. Its
        redeliveries change nothing (the first reason stands). Returns the words
        for the refusal's answer."""
        purchase_id = purchase_id_from_key(idempotency_key)
        if purchase_id is None:
            return Handled.NO_SUCH_PURCHASE.value
        try:
            view = self.require_review(
                purchase_id, reason=f"unusable webhook: {reason}", owner=CHECK_OWNER
            )
        except NotFoundError:
            return Handled.NO_SUCH_PURCHASE.value
        except DomainError as error:  # settled already: nothing waits on it
            return f"purchase left as it is: {error}"
        return f"purchase {purchase_id} is {view.status}"

    def _record_fact(
        self, webhook: Webhook, purchase_id: UUID | None
    ) -> tuple[Handled, str, str | None]:
        """What the fact did, the words kept for it, and the rule's refusal if any."""
        if purchase_id is None:
            return Handled.NO_SUCH_PURCHASE, Handled.NO_SUCH_PURCHASE.value, None
        try:
            if webhook.type is WebhookType.PAYMENT_CAPTURED:
                view = self.record_payment_captured(
                    purchase_id,
                    payment_id=webhook.payment_id,
                    amount_cents=webhook.amount_cents,
                )
            elif webhook.type is WebhookType.PAYMENT_DECLINED:
                view = self.record_payment_declined(
                    purchase_id, reason="the provider reported a decline"
                )
            else:
                view = self.record_refunded(
                    purchase_id, refund_id=webhook.refund_id or webhook.payment_id
                )
        except NotFoundError:
            return Handled.NO_SUCH_PURCHASE, Handled.NO_SUCH_PURCHASE.value, None
        except DomainError as error:
            return Handled.REFUSED, f"refused: {error}", str(error)
        return Handled.RECORDED, f"recorded; purchase {view.status}", None
