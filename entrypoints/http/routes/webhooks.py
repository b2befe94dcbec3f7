"""`POST /webhooks/payment`: the provider reports a fact; Club records only the fact.

The signature is checked over the raw body before anything is read (401, and the
refusal is kept: a row in `refused_webhooks` and a counter). A signed, readable
event goes through `ClubApplication.receive_webhook` (application/webhook_receipt.py),
which records its fact once per event id; the route maps what it did to the answer.
"""

from __future__ import annotations

from typing import Literal

import structlog
from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import Counter
from starlette.concurrency import run_in_threadpool

from application.payment_webhook import SIGNATURE_HEADER, Webhook, verify_signature
from application.provider_values import UnusableWebhookError
from application.webhook_receipt import Handled, WebhookOutcome
from entrypoints.config.container import Container
from entrypoints.http.api_docs import problems
from entrypoints.http.deps import ContainerDep
from entrypoints.http.problems import problem
from entrypoints.http.rate_limit import CallerLimit
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
    remote = request.client.host if request.client else None
    secret = getattr(request.app.state, "webhook_secret", "")
    if not verify_signature(secret, body, request.headers.get(SIGNATURE_HEADER)):
        # Anyone may send one: a forger's address pays for each refusal kept.
        limit: CallerLimit | None = getattr(request.app.state, "rate_limit", None)
        if limit is not None:
            limit.spend(f"address:{remote or ''}")
        return await run_in_threadpool(
            _refuse, container, "bad-signature", remote, body, 401
        )
    return await run_in_threadpool(_receive, container, body, remote)


def _receive(container: Container, body: bytes, remote: str | None) -> Response:
    """A signed webhook: blocking work (the database), off the event loop."""
    try:
        webhook = Webhook.from_json(body)
    except UnusableWebhookError as error:  # ours, but nothing the saga can act on
        said = container.app.review_unusable_webhook(error.idempotency_key, str(error))
        detail = f"{error}; {said}"
        return _refuse(container, "unreadable", remote, body, 422, detail)
    except ValueError as error:
        return _refuse(container, "unreadable", remote, body, 422, str(error))
    received = container.app.receive_webhook(webhook, records=container.webhooks)
    return _answer(received)


def _refuse(  # noqa: PLR0917 - one place builds every refusal
    container: Container,
    reason: Reason,
    remote: str | None,
    body: bytes,
    status: int,
    detail: str | None = None,
) -> Response:
    container.webhooks.refuse(reason=reason, remote=remote, body=body)
    REFUSED.labels(reason).inc()
    log.warning("webhook.refused", reason=reason, remote=remote, bytes=len(body))
    if status == 401:  # noqa: PLR2004
        return problem(
            401, "bad-signature", "Bad webhook signature",
            f"{SIGNATURE_HEADER} does not match this body under the shared secret "
            "(CLUB_PAYMENT_WEBHOOK_SECRET), or its timestamp is too old",
        )  # fmt: skip
    return problem(422, "unreadable-webhook", "Unreadable webhook", detail)


def _answer(received: WebhookOutcome) -> Response:
    """Every outcome is a 200: the provider cannot change any of them by resending."""
    if received.handled is Handled.REFUSED:
        log.warning(
            "webhook.fact_refused", event_id=received.event_id, error=received.refusal
        )
    body = WebhookOut(
        event_id=received.event_id,
        outcome=received.outcome,
        duplicate=received.duplicate,
    )
    return Response(body.model_dump_json(), media_type="application/json")
