"""Lean routes answered in front of FastAPI's middleware stack and router.

Before a lean route's `lean` function (lean_route.py) sees a request, FastAPI's
exception middlewares, its included routers' matching and `request_response`
take ~10% of an enrollment's API CPU (bench.profile_enroll profile). `LeanLanes`
sits in front of the app: a request whose method and path match a lean route
goes straight to that route's `lean`, in the scope FastAPI would have given it
(the app, the route, the path parameters). An error it raises is answered by the
app's own exception handlers, as FastAPI would answer it. A request `lean` hands
back, and every other request, goes to the app unchanged.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from typing import Any

import attrs
from fastapi import FastAPI, Request
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from entrypoints.http.body_limit import replay
from entrypoints.http.lean_route import HANDED_OVER, Lean, lean_of


@attrs.frozen
class _Lane:
    methods: frozenset[str]
    path: re.Pattern[str]
    convertors: dict[str, Any]  # starlette's, by parameter name
    route: APIRoute
    lean: Lean


class LeanLanes:
    def __init__(self, app: FastAPI) -> None:
        """`app` with every router already included: its lean routes are read here."""
        self.app = app
        self.lanes = tuple(_lanes(app))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            for lane in self.lanes:
                if scope["method"] in lane.methods:
                    found = lane.path.match(scope["path"])
                    if found is not None:
                        await self._lean(lane, found, scope, receive, send)
                        return
        await self.app(scope, receive, send)

    async def _lean(
        self,
        lane: _Lane,
        found: re.Match[str],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        scope["app"] = self.app
        scope["route"] = lane.route  # as FastAPI sets it: the Idempotency-Key's scope
        scope["path_params"] = {
            name: lane.convertors[name].convert(value)
            for name, value in found.groupdict().items()
        }
        request = Request(scope, receive)
        try:
            answer = await lane.lean(request)
        except Exception as error:  # answered as the app answers it
            await self._answer_error(request, error, send)
            return
        if answer is None:  # handed to FastAPI, with the body read so far
            scope[HANDED_OVER] = True  # not to be asked again there
            await self.app(scope, replay(await request.body(), receive), send)
            return
        await answer(scope, receive, send)

    async def _answer_error(
        self, request: Request, error: Exception, send: Send
    ) -> None:
        """The app's handler's answer; an error only the catch-all handles is
        raised on after it, as Starlette's ServerErrorMiddleware does."""
        handlers = self.app.exception_handlers
        handler = None
        if isinstance(error, HTTPException):
            handler = handlers.get(error.status_code)
        for cls in type(error).__mro__:
            if handler is not None or cls is Exception:
                break
            handler = handlers.get(cls)
        unexpected = handler is None
        if unexpected:
            handler = handlers.get(500) or handlers.get(Exception)
            if handler is None:
                raise error
        answer = handler(request, error)  # type: ignore[misc]
        if inspect.isawaitable(answer):
            answer = await answer
        assert isinstance(answer, Response)  # noqa: S101 - a handler's contract
        await answer(request.scope, request.receive, send)
        if unexpected:
            raise error


def _lanes(app: FastAPI) -> Iterator[_Lane]:
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        lean = lean_of(route)
        if isinstance(route, APIRoute) and lean is not None:
            yield _Lane(
                methods=frozenset(context.methods or ()),
                path=context.path_regex,
                convertors=dict(context.param_convertors),
                route=route,
                lean=lean,
            )
