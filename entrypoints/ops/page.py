"""`/ops/`: the operator's page — the chain as `/ops/status` reads it, a chart of each
hop's oldest age over the last hour, the delivery verdict in plain words, and the DLQ
by consumer and reason with a replay (dry run first, then confirm; audited).

Every route but the login sits behind `require_operator`, which accepts the page's
session cookie and, for a POST on it, checks the CSRF token and the Origin
(entrypoints/ops/access.py). The login takes the token once and sets the cookie
(entrypoints/ops/session.py). A browser that is not logged in gets the login form
(401) where an API client gets the usual problem document.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import parse_qs
from uuid import UUID

import structlog
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute

from application.console_reads import (
    CONSUMER_NAME,
    NotReplayableError,
    ReplayReport,
    ReplayRequest,
)
from application.ports import ConsoleReads
from entrypoints.config.container import Container
from entrypoints.http.deps import ContainerDep
from entrypoints.http.rate_limit import CallerLimit, RateLimitedError
from entrypoints.ops.access import (
    OpsConfig,
    OpsConfigDep,
    own_origin,
    require_operator,
    secure_cookie,
)
from entrypoints.ops.chain_status import as_json, read_chain, read_hop_ages
from entrypoints.ops.dlq_trail import dlq_trail
from entrypoints.ops.history import OpsHistory
from entrypoints.ops.html import (
    HEADERS,
    ReplayRecord,
    StatusView,
    dry_run_page,
    login_page,
    message_page,
    status_page,
)
from entrypoints.ops.provider_status import down_lines
from entrypoints.ops.reads import app_reads
from entrypoints.ops.session import (
    Session,
    cookie_header,
    cross_site,
    csrf_token,
    new_session_cookie,
)
from entrypoints.ops.view import dlq_groups, hop_ages, hop_rows, role_rows, verdict
from entrypoints.ops.work_html import work_section

log = structlog.get_logger()

OPERATOR = "ops-page"  # who, in the audit record of a replay from the page
MAX_BATCH = 100  # entries one replay from the page hands back, at most
RATE_PER_S = 50.0  # 100 in 2 s: inside the request deadline
READ_LIMIT = 200  # dead letters read per page view for their reasons
MAX_REASON = 200
SAMPLE_EVERY_S = 5.0
UNAUTHENTICATED = 401
FORBIDDEN = 403


class PageRoute(APIRoute):
    """A browser without a session gets the login form, not a problem document."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except HTTPException as e:
                browser = "text/html" in request.headers.get("accept", "")
                # A bearer token that is not the operator's, with no session: an
                # identity-aware proxy in front adds its own; log in past it.
                proxied = e.status_code == FORBIDDEN and not _in_session(request)
                if not browser or not (e.status_code == UNAUTHENTICATED or proxied):
                    raise
                return HTMLResponse(
                    login_page(), 401, headers=HEADERS | dict(e.headers or {})
                )

        return handle


def _in_session(request: Request) -> bool:
    return getattr(request.state, "ops_session", None) is not None


@asynccontextmanager
async def _sample_while_running(app: FastAPI) -> AsyncIterator[None]:
    """The charts' history keeps filling while nobody looks at the page."""
    task = asyncio.create_task(_sample_forever(app))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


protected = APIRouter(
    dependencies=[Depends(require_operator)],
    route_class=PageRoute,
    include_in_schema=False,
)
public = APIRouter(include_in_schema=False)
router = APIRouter(lifespan=_sample_while_running)


@protected.get("/")
async def page(
    request: Request,
    container: ContainerDep,
    config: OpsConfigDep,
    replay_id: Annotated[str | None, Query(alias="replay", max_length=64)] = None,
) -> Response:
    reads = _reads(request)
    if reads is None:
        return _nats_unavailable()
    chain = await read_chain(reads, **config.chain_options())
    shown = as_json(chain)
    rows = hop_rows(shown)
    history = _history(request.app)
    history.record(hop_ages(rows))
    entries = await reads.dead_letters.entries(limit=READ_LIMIT)
    view = StatusView(
        at=chain.at,
        verdict=verdict(shown["delivery"], shown["roles"], down_lines(shown)),
        rows=rows,
        roles=role_rows(shown),
        charts={row.key: history.series(row.key) for row in rows},
        dlq=dlq_groups(shown, entries, chain.at),
        csrf=_csrf(request, config),
        replayed=await _replay_record(container, replay_id) if replay_id else None,
        work=work_section(shown),
        dlq_trail=await dlq_trail(reads, entries, config.email_key_lifetime_s),
    )
    return HTMLResponse(status_page(view), headers=HEADERS)


@protected.post("/dlq/dry-run")
async def dry_run(request: Request, config: OpsConfigDep) -> Response:
    """What a replay would hand back, and how many; audited as a dry run, as the
    CLI's `--dry-run` is."""
    form = await _form(request)
    reads = _reads(request)
    if reads is None:
        return _nats_unavailable()
    refused = _refusal(form)
    if refused is not None:
        return refused
    try:
        report = await _replay(reads, form, config, batch=MAX_BATCH, dry_run=True)
    except NotReplayableError as e:
        return _bad_form(str(e))
    return HTMLResponse(
        dry_run_page(
            at=datetime.now(UTC),
            csrf=_csrf(request, config),
            consumer=form["consumer"],
            reason=form["reason"],
            matched=report.matched,
            batch=MAX_BATCH,
        ),
        headers=HEADERS,
    )


@protected.post("/dlq/replay")
async def confirm_replay(request: Request, config: OpsConfigDep) -> Response:
    """Hand back at most as many as the dry run showed, through the same code as
    `club dlq replay`; then show the audit record (a reload cannot replay again)."""
    form = await _form(request)
    reads = _reads(request)
    if reads is None:
        return _nats_unavailable()
    refused = _refusal(form)
    batch = form.get("batch", "")
    if refused is None and not (batch.isdigit() and 1 <= int(batch) <= MAX_BATCH):
        refused = _bad_form(f"batch must be a whole number from 1 to {MAX_BATCH}")
    if refused is not None:
        return refused
    try:
        report = await _replay(reads, form, config, batch=int(batch), dry_run=False)
    except NotReplayableError as e:
        return _bad_form(str(e))
    log.info(
        "ops.page_replayed",
        consumer=form["consumer"],
        replayed=report.replayed,
        held_back=len(report.held_back),
        replay_id=str(report.replay_id),
    )
    return RedirectResponse(f"/ops/?replay={report.replay_id}", status_code=303)


@protected.post("/logout")
async def logout() -> Response:
    response = RedirectResponse("/ops/", status_code=303)
    response.headers["set-cookie"] = cookie_header("", secure=False, max_age=0)
    return response


# Login attempts per client address and process: a handful a minute.
LOGINS = CallerLimit("10/minute")


@public.post("/login")
async def login(request: Request, config: OpsConfigDep) -> Response:
    """The one route under /ops without the operator policy: it is how a browser
    gets past it, with the token itself (compared in constant time)."""
    remote = request.client.host if request.client else ""
    if cross_site(request.headers.get("origin"), own_origin(request, config)):
        log.warning("ops.login_cross_site", remote=remote)
        return HTMLResponse(
            message_page("Refused", "a cross-site login is refused"), 403
        )
    try:
        LOGINS.spend(remote)  # a guesser gets a few tries a minute, not a loop
    except RateLimitedError as e:
        log.warning("ops.login_throttled", remote=remote)
        return HTMLResponse(
            login_page(f"Too many tries; wait {e.retry_after_s} s."),
            429,
            headers=HEADERS | {"Retry-After": str(e.retry_after_s)},
        )
    offered = (await _form(request)).get("token", "").strip()
    if not offered or not hmac.compare_digest(
        offered.encode(), config.operator_token.encode()
    ):
        log.warning("ops.login_refused", remote=remote)
        return HTMLResponse(
            login_page("That is not the operator token."), 401, headers=HEADERS
        )
    response = RedirectResponse("/ops/", status_code=303)
    response.headers["set-cookie"] = cookie_header(
        new_session_cookie(config.operator_token),
        secure=secure_cookie(request, config),
    )
    log.info("ops.login", remote=remote)
    return response


router.include_router(protected, prefix="/ops")
router.include_router(public, prefix="/ops")


def _reads(request: Request) -> ConsoleReads | None:
    """None while the API's NATS client is not connected."""
    nc: Any = getattr(request.app.state, "nats", None)
    if nc is None or not nc.is_connected:
        return None
    return app_reads(request.app.state, nc.jetstream())


def _nats_unavailable() -> Response:
    return HTMLResponse(
        message_page(
            "NATS is not connected",
            "The page reads JetStream; it answers again when /readyz is ready.",
        ),
        503,
        headers=HEADERS | {"Retry-After": "1"},
    )


def _csrf(request: Request, config: OpsConfig) -> str:
    """The session's CSRF token; none when the page was asked with the bearer token
    (a script, not a browser: its forms are not for posting)."""
    session: Session | None = getattr(request.state, "ops_session", None)
    return "" if session is None else csrf_token(config.operator_token, session)


async def _form(request: Request) -> dict[str, str]:
    """A url-encoded form's fields, first value of each (multipart is not taken)."""
    fields = parse_qs((await request.body()).decode("utf-8", "replace"))
    return {name: values[0] for name, values in fields.items()}


def _refusal(form: dict[str, str]) -> Response | None:
    consumer, reason = form.get("consumer", ""), form.get("reason", "").strip()
    if not CONSUMER_NAME.fullmatch(consumer):
        return _bad_form("name the consumer whose dead letters to replay")
    if not reason:
        return _bad_form("say why: the replay is audited with the reason")
    if len(reason) > MAX_REASON:
        return _bad_form(f"the reason is at most {MAX_REASON} characters")
    form["reason"] = reason
    return None


def _bad_form(text: str) -> Response:
    return HTMLResponse(message_page("Not replayed", text), 422, headers=HEADERS)


async def _replay(
    reads: ConsoleReads,
    form: dict[str, str],
    config: OpsConfig,
    *,
    batch: int,
    dry_run: bool,
) -> ReplayReport:
    """Never past the e-mail provider's key lifetime: those are `club dlq`'s."""
    request = ReplayRequest(
        consumer=form["consumer"],
        operator=OPERATOR,
        reason=form["reason"],
        batch=batch,
        rate_per_s=RATE_PER_S,
        dry_run=dry_run,
        key_lifetime_s=config.email_key_lifetime_s,
    )
    return await reads.dead_letters.replay(request)


async def _replay_record(container: Container, replay_id: str) -> ReplayRecord | None:
    """A replay the page made, from its audit record (so the banner says what was
    recorded, not what the URL claims)."""
    try:
        wanted = UUID(replay_id)
    except ValueError:
        return None
    found = await asyncio.to_thread(container.replays.find, wanted, operator=OPERATOR)
    if found is None:
        return None
    return ReplayRecord(
        replay_id=str(found.replay_id),
        consumer=found.consumer,
        reason=found.reason,
        replayed=found.replayed,
        outcome=found.outcome,
    )


def _history(app: FastAPI) -> OpsHistory:
    history: OpsHistory | None = getattr(app.state, "ops_history", None)
    if history is None:
        history = OpsHistory()
        app.state.ops_history = history
    return history


async def _sample_forever(app: FastAPI) -> None:
    """One read at a time, awaited to its end: a database that hangs holds up this
    loop, never piles up reads (a thread cannot be cancelled)."""
    while True:
        await asyncio.sleep(SAMPLE_EVERY_S)
        nc: Any = getattr(app.state, "nats", None)
        if nc is None or not nc.is_connected:
            continue
        try:
            ages = await read_hop_ages(app_reads(app.state, nc.jetstream()))
        except Exception as e:  # a missed sample, never a dead API
            log.debug("ops.sample_missed", error=type(e).__name__)
            continue
        _history(app).record(ages)
