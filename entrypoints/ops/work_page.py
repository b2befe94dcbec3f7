"""`/ops/work/{kind}?state=S`: purchases, notifications or exports in one state,
oldest first, paged (`limit`, `offset`). Behind `require_operator`, as the rest
of the page."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response

from application.work_lists import MAX_LIMIT, STATES
from entrypoints.ops.access import OpsConfigDep, require_operator
from entrypoints.ops.html import HEADERS, message_page
from entrypoints.ops.page import PageRoute
from entrypoints.ops.reads import app_reads
from entrypoints.ops.session import Session, csrf_token
from entrypoints.ops.work_html import bad_state_text, work_list_page

protected = APIRouter(
    dependencies=[Depends(require_operator)],
    route_class=PageRoute,
    include_in_schema=False,
)
router = APIRouter()


@protected.get("/work/{kind}")
async def work_list(
    kind: str,
    *,
    request: Request,
    config: OpsConfigDep,
    state: Annotated[str, Query(max_length=64)] = "",
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> Response:
    if kind not in STATES:
        text = f"{kind!r} is not listed here; valid: {', '.join(STATES)}"
        return HTMLResponse(message_page("Not a list", text), 404, headers=HEADERS)
    state = state or STATES[kind][0]
    if state not in STATES[kind]:
        page = message_page("Not a state", bad_state_text(kind, state))
        return HTMLResponse(page, 422, headers=HEADERS)
    nc: Any = getattr(request.app.state, "nats", None)
    if nc is None or not nc.is_connected:
        text = "The page reads JetStream; it answers again when /readyz is ready."
        page = message_page("NATS is not connected", text)
        return HTMLResponse(page, 503, headers=HEADERS | {"Retry-After": "1"})
    reads = app_reads(request.app.state, nc.jetstream())
    found = await asyncio.to_thread(
        reads.work_lists.page, kind, state, limit=limit, offset=offset
    )
    session: Session | None = getattr(request.state, "ops_session", None)
    csrf = "" if session is None else csrf_token(config.operator_token, session)
    html = work_list_page(found, now=datetime.now(UTC), csrf=csrf, limit=limit)
    return HTMLResponse(html, headers=HEADERS)


router.include_router(protected, prefix="/ops")
