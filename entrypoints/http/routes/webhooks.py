"""`POST /webhooks/payment`: the provider reports a fact; Club records only the fact.

The signature is checked over the raw body before anything is read (401, and the
refusal is kept: a row in `refused_webhooks` and a counter). A signed event is
recorded through the purchase's use cases, which recognise a repeated fact; its
event id is then kept, so a redelivery is answered from the first. What happens
next — access, a refund, an offer — is the saga's decision: the route only wakes it.
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID

import structlog
from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import Counter
from starlette.concurrency import run_in_threadpool

from adapters.postgres.deadlines import SagaDeadlines
from adapters.postgres.webhooks import WebhookLog
from application.errors import NotFoundError
from application.payment import SIGNATURE_HEADER, Webhook, WebhookType, verify_signature
from application.purchases import Purchases, purchase_id_from_key
from domain.errors import DomainError
from entrypoints.config.container import Container
from entrypoints.http.api_docs import problems
from entrypoints.http.deps import ContainerDep
from entrypoints.http.problems import problem
from entrypoints.http.schemas import WebhookOut

log = structlog.get_logger()
router = APIRouter()
REFUSED = Counter(
    "club_payment_webhooks_refused",
    "Payment webhooks refused (bad signature, unreadable body); each is a row in "
    "refused_webhooks. A rise means a wrong secret or a forger.",
    ["reason"],
)
Reason = Literal["bad-signature", "unreadable"]


@router.post(
    "/webhooks/payment",
    operation_id="payment_webhook",
    responses=problems(401, 413, 422, 503),
    openapi_extra={
        "parameters": [
            {
                "name": SIGNATURE_HEADER,
                "in": "header",
                "required": True,
                "description": "t=<unix seconds>,v1=<hex HMAC-SHA256 of 't.body'>",
                "schema": {"type": "string"},
            }
        ],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}}},
        },
    },
)
async def payment_webhook(request: Request, container: ContainerDep) -> Response:
    body = await request.body()  # the raw bytes: the signature covers exactly these
    return await run_in_threadpool(
        _receive,
        container,
        body,
        request.headers.get(SIGNATURE_HEADER),
        getattr(request.app.state, "webhook_secret", ""),
        request.client.host if request.client else None,
    )


def _receive(
    container: Container,
    body: bytes,
    signature: str | None,
    secret: str,
    remote: str | None,
) -> Response:
    """Blocking work (the database), off the event loop."""
    webhooks = WebhookLog(
        container.engine, SagaDeadlines(container.engine, owner="api", lease=1.0)
    )
    if not verify_signature(secret, body, signature):
        return _refuse(webhooks, "bad-signature", remote, body, 401)
    try:
        webhook = Webhook.from_json(body)
    except ValueError as error:
        return _refuse(webhooks, "unreadable", remote, body, 422, str(error))
    first = webhooks.outcome_of(webhook.event_id)
    if first is not None:
        return _answer(webhook.event_id, first, duplicate=True)
    purchase_id = purchase_id_from_key(webhook.idempotency_key)
    outcome = _record_fact(Purchases(container.app), webhook, purchase_id)
    if outcome == "no such purchase":
        purchase_id = None
    stored = webhooks.accept(
        event_id=webhook.event_id,
        type_=webhook.type.value,
        purchase_id=purchase_id,
        outcome=outcome,
    )
    return _answer(webhook.event_id, stored, duplicate=stored != outcome)


def _record_fact(
    purchases: Purchases, webhook: Webhook, purchase_id: UUID | None
) -> str:
    """The fact, through the use case; a fact the purchase refuses is kept as the
    outcome (and answered 200: the provider cannot make it right by resending)."""
    if purchase_id is None:
        return "no such purchase"
    try:
        if webhook.type is WebhookType.PAYMENT_CAPTURED:
            view = purchases.record_payment_captured(
                purchase_id,
                payment_id=webhook.payment_id,
                amount_cents=webhook.amount_cents,
            )
        elif webhook.type is WebhookType.PAYMENT_DECLINED:
            view = purchases.record_payment_declined(
                purchase_id, reason="the provider reported a decline"
            )
        else:
            view = purchases.record_refunded(
                purchase_id, refund_id=webhook.refund_id or webhook.payment_id
            )
    except NotFoundError:
        return "no such purchase"
    except DomainError as error:
        log.warning("webhook.fact_refused", event_id=webhook.event_id, error=str(error))
        return f"refused: {error}"
    return f"recorded; purchase {view.status}"


def _refuse(  # noqa: PLR0917 - one place builds every refusal
    webhooks: WebhookLog,
    reason: Reason,
    remote: str | None,
    body: bytes,
    status: int,
    detail: str | None = None,
) -> Response:
    webhooks.refuse(reason=reason, remote=remote, body=body)
    REFUSED.labels(reason).inc()
    log.warning("webhook.refused", reason=reason, remote=remote, bytes=len(body))
    if status == 401:  # noqa: PLR2004
        return problem(
            401, "bad-signature", "Bad webhook signature",
            f"{SIGNATURE_HEADER} does not match this body under the shared secret "
            "(CLUB_PAYMENT_WEBHOOK_SECRET), or its timestamp is too old",
        )  # fmt: skip
    return problem(422, "unreadable-webhook", "Unreadable webhook", detail)


def _answer(event_id: str, outcome: str, *, duplicate: bool) -> Response:
    body = WebhookOut(event_id=event_id, outcome=outcome, duplicate=duplicate)
    return Response(body.model_dump_json(), media_type="application/json")
