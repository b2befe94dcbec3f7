"""GET /statistics: the statistics read model and the position it reflects."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from application.identity import may_read_statistics
from entrypoints.http.api_docs import problems
from entrypoints.http.auth import CallerDep
from entrypoints.http.deps import ContainerDep
from entrypoints.http.paging import (
    DEFAULT_LIMIT,
    After,
    Limit,
    encode,
    lesson_cursor,
    next_link,
)
from entrypoints.http.schemas import StatisticsOut
from projections import statistics

router = APIRouter()


@router.get(
    "/statistics",
    operation_id="get_statistics",
    response_model=StatisticsOut,
    responses=problems(401, 403, 422, 503),
)
def get_statistics(
    container: ContainerDep,
    caller: CallerDep,
    limit: Limit = DEFAULT_LIMIT,
    after: After = None,
) -> dict[str, Any]:
    may_read_statistics(caller)
    start = lesson_cursor(after)
    with container.engine.begin() as conn:
        shown = statistics.read(conn, limit=limit, after=start)
    lessons = shown["lessons"]
    last = encode(lessons[-1]["lesson_id"]) if len(lessons) == limit else None
    return shown | {"next": next_link("/statistics", limit, last)}
