"""`club sandbox email`: an HTTP service that plays Club's e-mail provider.

It honours an Idempotency-Key (the first result, across restarts), answers a status
lookup by key, lists what it accepted, shows an HTML inbox at `/`, and misbehaves on
request through its knobs. The knobs act on the provider's API (send and lookup),
never on `/knobs`, `/` or `GET /messages`: a harness must always be able to undo them.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from application.email import check_key
from entrypoints.http.body_limit import BodyLimit
from entrypoints.http.problems import install_error_handlers, problem
from sandboxes import inbox
from sandboxes.drop import DropMarkedResponses, serve
from sandboxes.email_knobs import EMAIL_KNOBS
from sandboxes.email_provider import EmailSandbox
from sandboxes.email_request import RefusedError, read_key, read_send
from sandboxes.knob_routes import knob_routes
from sandboxes.knobs import (
    add_knob_arguments,
    knobs_from,
)

MAX_REQUEST_BYTES = 1024 * 1024
LIST_DEFAULT = 1000
LIST_MAX = 10_000
INBOX_LIMIT = 200


def create_app(
    data_dir: Path,
    knobs: Mapping[str, object] | None = None,
    *,
    clock: Callable[[], float] = time.time,
) -> FastAPI:
    """Raises `KnobError` for a bad knob, before anything listens."""
    sandbox = EmailSandbox(data_dir, knobs or {}, clock)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        sandbox.store.close()

    app = FastAPI(title="Club e-mail sandbox", lifespan=lifespan)
    install_error_handlers(app)

    @app.post("/messages", status_code=201)
    async def send(request: Request) -> Response:
        if refusal := await sandbox.refusal():
            return refusal
        try:
            wanted = read_send(read_key(request.headers), await request.body())
        except RefusedError as error:
            return problem(error.status, error.slug, error.title, str(error))
        return sandbox.send(request.scope, wanted)

    @app.get("/messages/{key:path}")
    async def status(key: str) -> Response:
        if refusal := await sandbox.refusal():
            return refusal
        try:
            check_key(key)
        except ValueError as error:
            return problem(400, "idempotency-key-invalid", "Key invalid", str(error))
        message = sandbox.store.find(key)
        if message is None:
            return problem(404, "unknown-key", "Unknown key", "nothing accepted")
        return JSONResponse(message.as_json())

    @app.get("/messages")
    async def listing(limit: str = str(LIST_DEFAULT), offset: str = "0") -> Response:
        count, skip = _whole(limit, 1, LIST_MAX), _whole(offset, 0, 10**12)
        if count is None or skip is None:
            return problem(
                422, "invalid-page", "Invalid page",
                f"limit is 1-{LIST_MAX}, offset a whole number from 0",
            )  # fmt: skip
        newest = sandbox.store.newest(count, skip)
        return JSONResponse(
            {"total": sandbox.store.count(), "messages": [m.as_json() for m in newest]}
        )

    @app.get("/", response_class=HTMLResponse)
    async def page() -> Response:
        html = inbox.render(sandbox.store.newest(INBOX_LIMIT), sandbox.store.count())
        return HTMLResponse(html, headers=inbox.HEADERS)

    app.include_router(knob_routes(sandbox.knobs))
    return app


def _whole(text: str, low: int, high: int) -> int | None:
    # The length check first: int() of a 5000-digit string raises, it is not a 400.
    if len(text) > len(str(high)) or not text.isdigit() or not low <= int(text) <= high:
        return None
    return int(text)


def asgi_app(app: FastAPI) -> DropMarkedResponses:
    """The app as served: the drop must be outermost, the body limit before parsing."""
    return DropMarkedResponses(BodyLimit(app, MAX_REQUEST_BYTES))


def run_email_sandbox(
    host: str, port: int, data_dir: Path, knobs: Mapping[str, object]
) -> None:
    app = asgi_app(create_app(data_dir, knobs))
    serve(app, host, port)


def parse_knob_args(argv: Sequence[str]) -> dict[str, object]:
    """`--fail-rate 0.3 --down ...` as knobs; a bad one exits 2 naming the fix."""
    parser = argparse.ArgumentParser(prog="club sandbox email")
    add_knob_arguments(parser, EMAIL_KNOBS)
    return knobs_from(parser.parse_args(argv), EMAIL_KNOBS)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sandboxes.email")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8025)
    parser.add_argument("--data-dir", type=Path, default=Path(".club/sandbox-email"))
    add_knob_arguments(parser, EMAIL_KNOBS)
    args = parser.parse_args(argv)
    run_email_sandbox(
        args.host, args.port, args.data_dir, knobs_from(args, EMAIL_KNOBS)
    )


if __name__ == "__main__":
    main()
