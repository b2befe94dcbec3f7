"""`/ops/purchases/{id}`: one purchase as an operator sees it, and, while it waits in
manual review, the form that settles it — the page's twin of `club purchases
resolve`, behind the same session and CSRF check as every change on the page
(entrypoints/ops/access.py:require_operator). The decision is recorded on the
purchase with the page's operator name and the reason; a list of the purchases
in review links here."""

from __future__ import annotations

import asyncio
import functools
from datetime import UTC, datetime
from html import escape
from urllib.parse import parse_qs
from uuid import UUID

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from application.errors import NotFoundError
from domain.errors import DomainError
from domain.purchase import Purchase, Resolution, Status
from entrypoints.config.settings import ConfigError
from entrypoints.http.deps import ContainerDep
from entrypoints.ops.access import OpsConfigDep, require_operator
from entrypoints.ops.html import HEADERS, STYLE, message_page
from entrypoints.ops.page import OPERATOR, PageRoute
from entrypoints.ops.purchase_resolve import MAX_REASON, WHAT_FOLLOWS, checked_reason
from entrypoints.ops.session import Session, csrf_token

router = APIRouter(
    prefix="/ops",
    dependencies=[Depends(require_operator)],
    route_class=PageRoute,
    include_in_schema=False,
)


@router.get("/purchases/{purchase_id}")
async def purchase_page(
    purchase_id: str, request: Request, container: ContainerDep, config: OpsConfigDep
) -> Response:
    wanted = _uuid(purchase_id)
    if wanted is None:
        return _message("No such purchase", "the address names no purchase id", 404)
    try:
        purchase = await asyncio.to_thread(container.app.get_purchase, wanted)
    except NotFoundError as error:
        return _message("No such purchase", str(error), 404)
    session: Session | None = getattr(request.state, "ops_session", None)
    # No token for a bearer caller (a script): its forms are not for posting.
    csrf = "" if session is None else csrf_token(config.operator_token, session)
    return HTMLResponse(_page(purchase, csrf), headers=HEADERS)


@router.post("/purchases/{purchase_id}/resolve")
async def resolve(
    purchase_id: str, request: Request, container: ContainerDep
) -> Response:
    wanted = _uuid(purchase_id)
    if wanted is None:
        return _message("No such purchase", "the address names no purchase id", 404)
    fields = parse_qs((await request.body()).decode("utf-8", "replace"))
    form = {name: values[0] for name, values in fields.items()}
    decision = next((r for r in Resolution if r.value == form.get("decision")), None)
    if decision is None:
        return _message("Not resolved", "choose refund, confirm or cancel", 422)
    try:  # the same rule as the command line's --reason
        reason = checked_reason(form.get("reason", ""))
    except ConfigError as error:
        return _message("Not resolved", str(error), 422)
    resolve_review = functools.partial(
        container.app.resolve_review,
        wanted,
        decision=decision,
        operator=OPERATOR,
        reason=reason,
        now=datetime.now(UTC),
    )
    try:
        await asyncio.to_thread(resolve_review)
    except NotFoundError as error:
        return _message("No such purchase", str(error), 404)
    except DomainError as error:  # not in review, or a decision that does not fit
        said = f"{error} (only manual review is resolved)"
        return _message("Not resolved", said, 409)
    return RedirectResponse(f"/ops/purchases/{wanted}", status_code=303)


def _page(p: Purchase, csrf: str) -> str:
    rows = [
        ("status", str(p.status)),
        ("price", f"{p.price_cents} cents"),
        ("payment", f"{p.payment_id or 'none captured'} ({p.captured_cents} cents)"),
        ("seat held", "yes" if p.hold_active else "no"),
        ("review", f"{p.review_owner}: {p.review_reason}" if p.review_reason else "—"),
        ("resolved", f"--{p.resolution} by {p.resolved_by}" if p.resolution else "—"),
    ]
    table = "".join(
        f"<tr><th>{escape(name)}</th><td>{escape(value)}</td></tr>"
        for name, value in rows
    )
    form = _form(p, csrf) if p.status is Status.MANUAL_REVIEW else ""
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>Purchase {escape(str(p.id))}</title><style>{STYLE}</style></head>"
        f"<body><main><section id='purchase'><h2>Purchase {escape(str(p.id))}</h2>"
        f"<table>{table}</table>{form}</section></main></body></html>"
    )


def _form(p: Purchase, csrf: str) -> str:
    choices = "".join(
        f"<p><label><input type='radio' name='decision' value='{r.value}' required> "
        f"{r.value}: {escape(WHAT_FOLLOWS[r])}</label></p>"
        for r in Resolution
    )
    return (
        f"<form method='post' action='/ops/purchases/{p.id}/resolve' id='resolve'>"
        f"<input type='hidden' name='csrf' value='{escape(csrf)}'>{choices}"
        f"<p><label>Why<br><input name='reason' maxlength='{MAX_REASON}' required>"
        "</label></p><p><button type='submit'>Record the decision</button></p></form>"
    )


def _uuid(text: str) -> UUID | None:
    try:
        return UUID(text)
    except ValueError:
        return None


def _message(title: str, text: str, status: int) -> Response:
    return HTMLResponse(message_page(title, text), status, headers=HEADERS)
