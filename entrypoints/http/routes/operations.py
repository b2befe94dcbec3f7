"""Operations: ask for a roster export (202), follow it, fetch its file.

`202 pending` means only "recorded": the request is an event in the event store,
and the export worker moves it on. `GET /operations/{id}` reads the aggregate, so
it says `succeeded` only once the worker recorded that the file is complete.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal
from uuid import UUID, uuid4

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from pydantic import BaseModel

from application.commands import RequestExport
from application.errors import NotFoundError
from application.exports import export_id_for
from application.identity import Caller, ForbiddenError, may_see_lesson_roster
from domain.export import Export, ExportStatus
from entrypoints.config.container import Container
from entrypoints.config.settings import Settings, exports_dir
from entrypoints.http.api_docs import PROBLEM_SCHEMA, links, merged, problems
from entrypoints.http.auth import CallerDep
from entrypoints.http.deps import ContainerDep, IdempotencyKey
from entrypoints.http.idempotent import run_once
from entrypoints.http.problems import MEDIA_TYPE, RETRY_AFTER_S, problem

router = APIRouter()
OPERATION_ID = "$response.body#/operation_id"
OPERATION_LINKS = links(
    GetOperation=("get_operation", {"operation_id": OPERATION_ID}),
    GetOperationResult=("get_operation_result", {"operation_id": OPERATION_ID}),
)
KIND: Literal["roster-export"] = "roster-export"


class OperationAccepted(BaseModel):
    operation_id: UUID
    status: Literal["pending"]


class OperationOut(BaseModel):
    operation_id: UUID
    kind: Literal["roster-export"]
    status: ExportStatus
    lesson_id: UUID
    requested_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    attempts: int
    rows: int | None = None
    result_url: str | None = None
    # Succeeded, but retention removed the file (CLUB_EXPORT_RETENTION): no URL
    # that would only answer 410.
    result_expired: bool = False
    error: str | None = None


def _files_dir(request: Request) -> Path:
    """Set by create_app from CLUB_DATA_DIR; a bare app reads the setting itself."""
    directory: Path | None = getattr(request.app.state, "exports_dir", None)
    return directory or exports_dir(Settings.from_env().data_dir)


ExportsDir = Annotated[Path, Depends(_files_dir)]


def _problem_doc(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {MEDIA_TYPE: {"schema": PROBLEM_SCHEMA}},
    }


@router.post(
    "/lessons/{lesson_id}/roster-exports",
    status_code=202,
    operation_id="request_roster_export",
    response_model=OperationAccepted,
    responses=merged(
        {202: OPERATION_LINKS}, problems(400, 401, 403, 404, 409, 413, 422, 503)
    ),
)
def post_roster_export(
    lesson_id: UUID,
    request: Request,
    container: ContainerDep,
    caller: CallerDep,
    key: IdempotencyKey = None,
) -> Response:
    app, now = container.app, datetime.now(UTC)
    may_see_lesson_roster(caller, app.get_lesson(lesson_id).teacher_id)
    if key is None:
        cmd = RequestExport(export_id=uuid4(), lesson_id=lesson_id, requested_at=now)
        return accepted(app.request_export(cmd))
    cmd = RequestExport(
        export_id=export_id_for(lesson_id, key), lesson_id=lesson_id, requested_at=now
    )
    return run_once(request, key, None, partial(app.request_export_once, cmd), accepted)


@router.get(
    "/operations/{operation_id}",
    operation_id="get_operation",
    response_model=OperationOut,
    responses=problems(401, 404, 422, 503),
)
def get_operation(
    operation_id: UUID,
    container: ContainerDep,
    caller: CallerDep,
    directory: ExportsDir,
) -> OperationOut:
    export = _own_export(container, caller, operation_id)
    return operation_out(export, kept=_result_path(export, directory).is_file())


@router.get(
    "/operations/{operation_id}/result",
    operation_id="get_operation_result",
    response_class=FileResponse,
    responses=merged(
        {200: {"content": {"text/csv": {}}, "description": "The roster as CSV."}},
        problems(401, 404, 422, 503),
        {409: _problem_doc("The operation has not succeeded (yet): see its status.")},
        {410: _problem_doc("The operation succeeded but its file was removed.")},
    ),
)
def get_operation_result(
    operation_id: UUID,
    container: ContainerDep,
    caller: CallerDep,
    directory: ExportsDir,
) -> Response:
    export = _own_export(container, caller, operation_id)
    if export.status is not ExportStatus.SUCCEEDED or export.result_name is None:
        return _not_ready(export)
    path = _result_path(export, directory)
    if not path.is_file():
        return problem(
            410, "result-gone", "The result is gone",
            f"operation {export.id} succeeded, but its file is no longer kept; "
            "request a new export",
        )  # fmt: skip
    return FileResponse(
        path,
        media_type="text/csv; charset=utf-8",
        filename=f"roster-{export.lesson_id}.csv",
    )


def _own_export(container: Container, caller: Caller, operation_id: UUID) -> Export:
    """An operation is its lesson's teacher's; to anyone else it does not exist."""
    export = container.app.get_export(operation_id)
    try:
        may_see_lesson_roster(
            caller, container.app.get_lesson(export.lesson_id).teacher_id
        )
    except ForbiddenError:
        raise NotFoundError("operation", operation_id) from None
    return export


def _result_path(export: Export, directory: Path) -> Path:
    """The name recorded by the worker, inside the exports directory only: never a
    path a client sent (the operation id is a UUID, the name derived from it)."""
    return directory / Path(export.result_name or "-").name


def _not_ready(export: Export) -> JSONResponse:
    if export.status is ExportStatus.FAILED:
        return problem(
            409, "operation-failed", "The operation failed",
            f"operation {export.id} failed: {export.error}; request a new export",
        )  # fmt: skip
    return problem(
        409, "operation-not-finished", "The result is not ready",
        f"operation {export.id} is {export.status}; poll /operations/{export.id}",
        headers={"Retry-After": RETRY_AFTER_S},
    )  # fmt: skip


def accepted(export: object) -> JSONResponse:
    assert isinstance(export, Export)  # noqa: S101 - the use case's result
    body = OperationAccepted(operation_id=export.id, status="pending")
    return JSONResponse(
        body.model_dump(mode="json"),
        status_code=202,
        headers={"Location": f"/operations/{export.id}"},
    )


def operation_out(export: Export, *, kept: bool) -> OperationOut:
    succeeded = export.status is ExportStatus.SUCCEEDED
    served = succeeded and kept
    return OperationOut(
        operation_id=export.id,
        kind=KIND,
        status=export.status,
        lesson_id=export.lesson_id,
        requested_at=export.requested_at,
        started_at=export.started_at,
        finished_at=export.finished_at,
        attempts=export.attempts,
        rows=export.rows,
        result_url=f"/operations/{export.id}/result" if served else None,
        result_expired=succeeded and not kept,
        error=export.error,
    )
