"""`/ops/*`: the operator's routes. Every one sits behind `require_operator` (the
router's own dependency), and tests/e2e/test_ops_access.py fails for any `/ops`
route of the app that answers without the operator token."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from entrypoints.api_docs import problems
from entrypoints.chain_status import as_json, read_chain
from entrypoints.operator import OpsConfigDep, require_operator
from entrypoints.problems import problem
from entrypoints.routes.deps import ContainerDep

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


@router.get("/status", operation_id="ops_status", responses=problems(503))
async def status(
    request: Request, container: ContainerDep, config: OpsConfigDep
) -> Response:
    """Every hop's count and oldest age, each consumer's lag, the DLQ, store sizes,
    and the notification queue's delivery time against the promise (as
    `club status --json`)."""
    nc: Any = getattr(request.app.state, "nats", None)
    if nc is None or not nc.is_connected:
        return problem(
            503, "nats-unavailable", "NATS is not connected",
            "the status reads JetStream; retry when /readyz is ready",
            headers={"Retry-After": "1"},
        )  # fmt: skip
    chain = await read_chain(
        container,
        nc.jetstream(),
        promise_seconds=config.promise_seconds,
        configured_service_per_s=config.email_rate_per_s,
    )
    return JSONResponse(as_json(chain))
