"""GET /statistics: the statistics read model and the position it reflects."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from entrypoints.http.api_docs import problems
from entrypoints.http.deps import ContainerDep
from entrypoints.http.schemas import StatisticsOut
from projections import statistics

router = APIRouter()


@router.get(
    "/statistics",
    operation_id="get_statistics",
    response_model=StatisticsOut,
    responses=problems(503),
)
def get_statistics(container: ContainerDep) -> dict[str, Any]:
    with container.engine.begin() as conn:
        return statistics.read(conn)
