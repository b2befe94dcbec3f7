"""`club sandbox payment`: an HTTP service that plays Club's payment provider.

Charges and refunds honour an Idempotency-Key (the first result, across restarts),
a status lookup answers by key, `GET /payments` lists everything like a test-mode
dashboard, and every settled charge or refund is reported to `webhook_url` by a
webhook signed with `webhook_secret`. With no knob set a charge answers `pending`
and captures ~200 ms later, so a purchase completes on its own. The knobs act on
the provider's API (charges, refunds, lookups), never on `/knobs` or the listing:
a harness must always be able to undo them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from application.payment import check_key
from entrypoints.http.problems import install_error_handlers, problem
from sandboxes.drop import serve
from sandboxes.email import asgi_app
from sandboxes.knob_routes import knob_routes
from sandboxes.knobs import add_knob_arguments, knobs_from
from sandboxes.payment_knobs import PAYMENT_KNOBS
from sandboxes.payment_provider import PaymentSandbox, refund_json
from sandboxes.payment_request import (
    RefusedError,
    read_charge,
    read_key,
    read_refund,
)
from sandboxes.payment_webhooks import WebhookSender

SECRET_ENV = "CLUB_PAYMENT_WEBHOOK_SECRET"  # noqa: S105 - a variable name
LIST_DEFAULT = 1000
LIST_MAX = 10_000
WEBHOOK_LOG = 200
LOOKUP_LOG = 10_000


def create_app(
    data_dir: Path,
    knobs: Mapping[str, object] | None = None,
    *,
    webhook_url: str | None = None,
    webhook_secret: str = "",
    clock: Callable[[], float] = time.time,
) -> FastAPI:
    """Raises `KnobError` for a bad knob, `ValueError` for a bad webhook setting,
    before anything listens."""
    check_webhook_target(webhook_url, webhook_secret)
    sandbox = PaymentSandbox(data_dir, knobs or {}, clock)
    sender = WebhookSender(sandbox, webhook_url, webhook_secret)
    lookups: deque[dict[str, object]] = deque(maxlen=LOOKUP_LOG)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(sender.run())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sandbox.store.close()

    app = FastAPI(title="Club payment sandbox", lifespan=lifespan)
    install_error_handlers(app)

    @app.post("/payments", status_code=201)
    async def charge(request: Request) -> Response:
        if refusal := await sandbox.refusal():
            return refusal
        try:
            wanted = read_charge(read_key(request.headers), await request.body())
        except RefusedError as error:
            return problem(error.status, error.slug, error.title, str(error))
        return sandbox.charge(request.scope, wanted)

    @app.get("/payments/{key:path}")
    async def payment_status(key: str) -> Response:
        started = clock()
        refusal = await sandbox.refusal()
        lookups.append({"key": key, "started_at": started, "finished_at": clock()})
        if refusal:
            return refusal
        if invalid := _bad_key(key):
            return invalid
        payment = sandbox.store.payment_by_key(key)
        if payment is None:
            return problem(
                404, "unknown-key", "Unknown key", "no charge under this key"
            )
        return JSONResponse(sandbox.payment_json(payment))

    @app.get("/payments")
    async def listing(limit: str = str(LIST_DEFAULT), offset: str = "0") -> Response:
        count, skip = _whole(limit, 1, LIST_MAX), _whole(offset, 0, 10**12)
        if count is None or skip is None:
            return problem(
                422, "invalid-page", "Invalid page",
                f"limit is 1-{LIST_MAX}, offset a whole number from 0",
            )  # fmt: skip
        payments = sandbox.store.newest_payments(count, skip)
        return JSONResponse(
            {
                "total": sandbox.store.count_payments(),
                "payments": [sandbox.payment_json(p) for p in payments],
            }
        )

    @app.post("/refunds", status_code=201)
    async def refund(request: Request) -> Response:
        if refusal := await sandbox.refusal(refunds=True):
            return refusal
        try:
            wanted = read_refund(read_key(request.headers), await request.body())
        except RefusedError as error:
            return problem(error.status, error.slug, error.title, str(error))
        return sandbox.refund(request.scope, wanted)

    @app.get("/refunds/{key:path}")
    async def refund_status(key: str) -> Response:
        if refusal := await sandbox.refusal(refunds=True):
            return refusal
        if invalid := _bad_key(key):
            return invalid
        found = sandbox.store.refund_by_key(key)
        if found is None:
            return problem(
                404, "unknown-key", "Unknown key", "no refund under this key"
            )
        return JSONResponse(refund_json(found))

    @app.get("/lookups")
    async def lookup_log() -> Response:
        """Every payment status lookup with when it began and ended: a harness
        counts them and checks that no two for one key overlapped."""
        return JSONResponse({"lookups": list(lookups)})

    @app.get("/webhooks")
    async def webhooks() -> Response:
        return JSONResponse(
            {
                "undelivered": sandbox.store.outbox.undelivered_count(),
                "webhooks": sandbox.store.outbox.log(WEBHOOK_LOG),
            }
        )

    app.include_router(knob_routes(sandbox.knobs))
    return app


def check_webhook_target(url: str | None, secret: str) -> None:
    if url is None:
        return
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        raise ValueError(f"the webhook URL is not a URL: {url!r}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(
            f"the webhook URL must look like http://host/path, got {url!r}"
        )
    if not secret:
        raise ValueError(
            f"a webhook URL needs a signing secret: --webhook-secret or {SECRET_ENV}"
        )


def _bad_key(key: str) -> Response | None:
    try:
        check_key(key)
    except ValueError as error:
        return problem(400, "idempotency-key-invalid", "Key invalid", str(error))
    return None


def _whole(text: str, low: int, high: int) -> int | None:
    # The length check first: int() of a 5000-digit string raises, it is not a 400.
    if len(text) > len(str(high)) or not text.isdigit() or not low <= int(text) <= high:
        return None
    return int(text)


def run_payment_sandbox(  # noqa: PLR0917 - the signature the CLI calls
    host: str,
    port: int,
    data_dir: Path,
    knobs: Mapping[str, object],
    webhook_url: str | None,
    webhook_secret: str,
) -> None:
    app = create_app(
        data_dir, knobs, webhook_url=webhook_url, webhook_secret=webhook_secret
    )
    serve(asgi_app(app), host, port)


def parse_knob_args(argv: Sequence[str]) -> dict[str, object]:
    """`--decline-rate 0.3 --refunds-down ...` as knobs; a bad one exits 2."""
    parser = argparse.ArgumentParser(prog="club sandbox payment")
    add_knob_arguments(parser, PAYMENT_KNOBS)
    return knobs_from(parser.parse_args(argv), PAYMENT_KNOBS)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sandboxes.payment")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8026)
    parser.add_argument("--data-dir", type=Path, default=Path(".club/sandbox-payment"))
    parser.add_argument("--webhook-url", help="where signed webhooks are POSTed")
    parser.add_argument(
        "--webhook-secret",
        default=os.environ.get(SECRET_ENV, ""),
        help=f"the HMAC-SHA256 signing secret (default: ${SECRET_ENV})",
    )
    add_knob_arguments(parser, PAYMENT_KNOBS)
    args = parser.parse_args(argv)
    try:
        check_webhook_target(args.webhook_url, args.webhook_secret)
    except ValueError as error:
        parser.error(str(error))  # exits 2 naming the fix, before anything listens
    run_payment_sandbox(
        args.host, args.port, args.data_dir, knobs_from(args, PAYMENT_KNOBS),
        args.webhook_url, args.webhook_secret,
    )  # fmt: skip


if __name__ == "__main__":
    main()
