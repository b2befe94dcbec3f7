"""The HTTP API (docs/http-api.md): the FastAPI app, its routers and its edges.

Each resource's routes live in `entrypoints/routes/`; they get the container as a
dependency, so a test can hand `create_app` any container it built.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI

from adapters.nats.streams import connect
from entrypoints.body_limit import BodyLimit
from entrypoints.bootstrap import Container
from entrypoints.deadline import DEFAULT_DEADLINE_S, Deadline
from entrypoints.exports_wiring import exports_dir
from entrypoints.operator import OpsConfig
from entrypoints.problems import install_error_handlers
from entrypoints.request_context import RequestContext
from entrypoints.routes import (
    enrollments,
    health,
    lessons,
    operations,
    ops,
    ops_page,
    purchases,
    statistics,
    students,
    webhooks,
)

ROUTERS = (
    students, lessons, enrollments, purchases, webhooks, operations, statistics,
    health, ops, ops_page,
)  # fmt: skip


def create_app(
    container: Container,
    nats_url: str | None = None,
    *,
    deadline_seconds: float = DEFAULT_DEADLINE_S,
    data_dir: Path | None = None,
    hold_seconds: int = purchases.DEFAULT_HOLD_SECONDS,
    webhook_secret: str = "",
    ops: OpsConfig | None = None,
) -> FastAPI:
    """`data_dir`: where export results are served from (CLUB_DATA_DIR);
    `webhook_secret`: what payment webhooks are signed with ("" refuses them all);
    `ops`: the operator token and promise for /ops/* (None: from CLUB_* on first use).
    """

    @asynccontextmanager
    async def lifespan(api: FastAPI) -> AsyncIterator[None]:
        api.state.nats = await connect(nats_url, name="club-api") if nats_url else None
        yield
        if api.state.nats is not None:
            await api.state.nats.close()

    api = FastAPI(title="Club", version="0.1.0", lifespan=lifespan)
    api.state.container = container
    api.state.ops = ops
    api.state.hold_seconds = hold_seconds
    api.state.webhook_secret = webhook_secret
    if data_dir is not None:
        api.state.exports_dir = exports_dir(data_dir)
    install_error_handlers(api)
    for module in ROUTERS:
        api.include_router(module.router)
    # Outermost: the request's ids are bound for every line below, the deadline's too.
    return RequestContext(Deadline(BodyLimit(api), deadline_seconds))  # type: ignore[return-value]
