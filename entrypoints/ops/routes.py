"""`/ops/*`: the operator's routes. Every one sits behind `require_operator` (the
router's own dependency), and tests/e2e/test_ops_access.py fails for any `/ops`
route of the app that answers without the operator token."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from entrypoints.http.api_docs import problems
from entrypoints.http.deps import ContainerDep
from entrypoints.http.problems import problem
from entrypoints.ops.access import OpsConfigDep, require_operator
from entrypoints.ops.chain_status import as_json, read_chain
from entrypoints.ops.reads import app_reads
from entrypoints.ops.trace_collect import as_json as trace_json
from entrypoints.ops.trace_collect import collect

_FORBIDDEN: dict[int | str, dict[str, Any]] = {
    403: problems(401)[401]
    | {"description": "A bearer token that is not the operator token."}
}
router = APIRouter(
    prefix="/ops",
    tags=["operations"],
    dependencies=[Depends(require_operator)],
    responses=problems(401) | _FORBIDDEN,
)


def _nats(request: Request) -> Any:
    """The API's NATS client, or None while it is not connected."""
    nc: Any = getattr(request.app.state, "nats", None)
    return nc if nc is not None and nc.is_connected else None


def _nats_unavailable(what: str) -> Response:
    return problem(
        503, "nats-unavailable", "NATS is not connected",
        f"the {what} reads JetStream; retry when /readyz is ready",
        headers={"Retry-After": "1"},
    )  # fmt: skip


@router.get("/status", operation_id="ops_status", responses=problems(503))
async def status(request: Request, config: OpsConfigDep) -> Response:
    """Every hop's count and oldest age, each consumer's lag, the DLQ, store sizes,
    and the notification queue's delivery time against the promise (as
    `club status --json`)."""
    nc = _nats(request)
    if nc is None:
        return _nats_unavailable("status")
    chain = await read_chain(
        app_reads(request.app.state, nc.jetstream()), **config.chain_options()
    )
    return JSONResponse(as_json(chain))


@router.get(
    "/trace/{trace_id}", operation_id="ops_trace", responses=problems(404, 422, 503)
)
async def trace(trace_id: UUID, request: Request, container: ContainerDep) -> Response:
    """One enrollment, purchase or export operation through the chain: each step
    with its time and where it is recorded, and who owns the next step (as
    `club trace ID --json`)."""
    nc = _nats(request)
    if nc is None:
        return _nats_unavailable("trace")
    reads = app_reads(request.app.state, nc.jetstream())
    found = await collect(container.app, reads, trace_id)
    if found is None:
        return problem(
            404, "not-found", "Nothing is stored under this id",
            f"no enrollment, purchase or export has the id {trace_id}",
        )  # fmt: skip
    return JSONResponse(trace_json(found))
