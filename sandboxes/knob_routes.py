"""The routes every sandbox serves besides its own: its knobs, and its health.

`GET /knobs` shows them, `PUT /knobs` changes any of them at once (unknown names or
bad values: 422, nothing changed); these answer even when the knob `down` is set, so a
harness can always undo what it did.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from entrypoints.http.problems import problem
from sandboxes.knobs import KnobBoard, KnobError


def knob_routes(knobs: KnobBoard) -> APIRouter:
    router = APIRouter()

    @router.get("/knobs")
    async def get_knobs() -> Response:
        return JSONResponse(knobs.values())

    @router.put("/knobs")
    async def put_knobs(request: Request) -> Response:
        try:
            changes = await request.json()
        except (ValueError, RecursionError):
            return problem(400, "malformed-json", "Malformed JSON", "send JSON")
        if not isinstance(changes, dict):
            return problem(422, "invalid-knobs", "Invalid knobs", "send an object")
        try:
            return JSONResponse(knobs.update(changes))
        except KnobError as error:
            return problem(422, "invalid-knobs", "Invalid knobs", str(error))

    @router.get("/healthz")
    @router.get("/readyz")
    async def healthz() -> Response:
        return JSONResponse({"status": "ok"})

    return router
