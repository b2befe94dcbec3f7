"""Liveness and readiness (database and NATS)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import sqlalchemy as sa
import structlog
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from entrypoints.config.container import Container
from entrypoints.http.api_docs import problems
from entrypoints.http.deps import ContainerDep
from entrypoints.http.problems import problem

log = structlog.get_logger()
router = APIRouter()


@router.get("/healthz", operation_id="healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


# Anyone may ask, so every caller within this long shares one check: a flood of
# anonymous probes costs the database and the broker one round trip a second.
CHECK_SHARED_FOR_S = 1.0
CHECK_WITHIN_S = 2.0  # a readiness probe's own timeout is typically 1-5 s
Checks = dict[str, bool]


@router.get("/readyz", operation_id="readyz", responses=problems(503))
async def readyz(request: Request, container: ContainerDep) -> Response:
    checks = await _shared_checks(request.app.state, container)
    if all(checks.values()):
        return JSONResponse({"status": "ready", "checks": checks})
    return problem(
        503, "not-ready", "Not ready", headers={"Retry-After": "1"}, checks=checks
    )


async def _shared_checks(state: Any, container: Container) -> Checks:
    loop = asyncio.get_running_loop()
    shared: tuple[float, asyncio.AbstractEventLoop, asyncio.Future[Checks]] | None = (
        getattr(state, "readiness", None)
    )
    # A check still running is joined, never started again beside it: however many
    # ask, at most one check runs (per event loop: a future is its loop's alone).
    if (
        shared is None
        or shared[1] is not loop
        or (shared[2].done() and time.monotonic() - shared[0] >= CHECK_SHARED_FOR_S)
    ):
        shared = (
            time.monotonic(),
            loop,
            asyncio.ensure_future(_checks(state, container)),
        )
        state.readiness = shared
    # A caller that hangs up cancels its wait, never the check the others share.
    return dict(await asyncio.shield(shared[2]))


async def _checks(state: Any, container: Container) -> Checks:
    database = asyncio.to_thread(_database_ready, container)
    try:
        ready = await asyncio.wait_for(database, CHECK_WITHIN_S)
    except Exception:  # a hung server (its thread ends at its deadline), any failure
        ready = False
    return {"database": ready, "nats": await _nats_ready(getattr(state, "nats", None))}


def _database_ready(container: Container) -> bool:
    try:
        with container.engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.SQLAlchemyError:
        return False
    return True


async def _nats_ready(nc: Any) -> bool:
    if nc is None or not nc.is_connected:
        return False
    try:
        await asyncio.wait_for(nc.jetstream().account_info(), 2)
    except Exception:  # any failure means "not ready", never a 500
        return False
    return True
