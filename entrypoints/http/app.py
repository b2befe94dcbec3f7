"""The HTTP API (docs/http-api.md): the FastAPI app, its routers and its edges.

Each resource's routes live in `entrypoints/http/routes/`; they get the container as a
dependency, so a test can hand `create_api` any container it built. The operator's
routes are the console's (`entrypoints.ops`): the composition root adds them
(`entrypoints.runtime.api.create_app`), so this package knows nothing of them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import APIRouter, FastAPI
from starlette.types import ASGIApp

from adapters.identity.tokens import TokenVerifier
from adapters.nats.streams import connect
from entrypoints.config.container import Container
from entrypoints.config.settings import exports_dir
from entrypoints.http.deadline import DEFAULT_DEADLINE_S
from entrypoints.http.edge import Edge
from entrypoints.http.lean_lanes import LeanLanes
from entrypoints.http.problems import install_error_handlers
from entrypoints.http.rate_limit import CallerLimit
from entrypoints.http.routes import (
    enrollments,
    health,
    lessons,
    operations,
    purchases,
    statistics,
    students,
    webhooks,
)

# Something that runs beside the app for its lifetime, on its event loop.
Beside = Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]

ROUTERS = (
    students, lessons, enrollments, purchases, webhooks, operations, statistics,
    health,
)  # fmt: skip


def create_api(
    container: Container,
    nats_url: str | None = None,
    *,
    verifier: TokenVerifier,
    deadline_seconds: float = DEFAULT_DEADLINE_S,
    data_dir: Path | None = None,
    hold_seconds: int = purchases.DEFAULT_HOLD_SECONDS,
    webhook_secret: str = "",
    more_routers: Sequence[APIRouter] = (),
    state: Mapping[str, object] | None = None,
    rate_limit: CallerLimit | None = None,
    allowed_hosts: frozenset[str] | None = None,
    also_running: Sequence[Beside] = (),
) -> FastAPI:
    """`verifier`: who a bearer token says calls (contract §4.1);
    `data_dir`: where export results are served from (CLUB_DATA_DIR);
    `webhook_secret`: what payment webhooks are signed with ("" refuses them all);
    `more_routers` and `state`: another package's routes, and what they read from
    `app.state`; `rate_limit`: requests per caller (None: none);
    `allowed_hosts`: the names served (None: any, as a test's client sends);
    `also_running`: what runs beside the app for its lifetime (its metrics port).
    """

    @asynccontextmanager
    async def lifespan(api: FastAPI) -> AsyncIterator[None]:
        api.state.nats = await connect(nats_url, name="club-api") if nats_url else None
        async with contextlib.AsyncExitStack() as beside:
            for started in also_running:
                await beside.enter_async_context(started(api))
            yield
        if api.state.nats is not None:
            await api.state.nats.close()

    api = FastAPI(title="Club", version="0.1.0", lifespan=lifespan)
    api.state.container = container
    api.state.verifier = verifier
    api.state.rate_limit = rate_limit
    for name, value in (state or {}).items():
        setattr(api.state, name, value)
    api.state.hold_seconds = hold_seconds
    api.state.webhook_secret = webhook_secret
    if data_dir is not None:
        api.state.exports_dir = exports_dir(data_dir)
    install_error_handlers(api)
    for router in (*(module.router for module in ROUTERS), *more_routers):
        api.include_router(router)
    served: ASGIApp = Edge(
        LeanLanes(api), deadline_seconds=deadline_seconds, allowed_hosts=allowed_hosts
    )
    return served  # type: ignore[return-value]
