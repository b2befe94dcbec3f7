"""GET /statistics: the statistics read model and the position it reflects."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from application.identity import may_read_statistics
from entrypoints.http.api_docs import problems
from entrypoints.http.auth import CallerDep
from entrypoints.http.deps import ContainerDep
from entrypoints.http.schemas import StatisticsOut
from projections import statistics

router = APIRouter()


@router.get(
    "/statistics",
    operation_id="get_statistics",
    response_model=StatisticsOut,
    responses=problems(401, 403, 503),
)
def get_statistics(container: ContainerDep, caller: CallerDep) -> dict[str, Any]:
    may_read_statistics(caller)
    with container.engine.begin() as conn:
        return statistics.read(conn)
