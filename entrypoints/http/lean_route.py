"""A FastAPI route with a lean lane for its well-formed requests.

FastAPI's generic handler solves every declared parameter and dependency of a
route on every request: ~10% of an enrollment's API CPU (bench.profile_enroll
profile). A `lean_route` keeps the route's declaration — its parameters, body,
security and answers in `/openapi.json` come from the endpoint's signature as
before — and its generic handler. Its `lean` function sees each request first and
answers it, or returns None to hand it to the generic handler, which then answers
exactly as it always did (FastAPI's own 422s included). So `lean` must take only
what the generic handler would accept, with the same values, and decide to hand
over before anything with an effect (the rate limit's count) happens.

In `club api` a lean route's requests do not reach FastAPI's router at all:
`lean_lanes.py` hands them to `lean` in front of it. The handler below serves an
app without that front (a test's bare FastAPI app) the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

# Answers a request the generic handler would accept, or None to hand it over.
Lean = Callable[[Request], Awaitable[Response | None]]

# Set in a request's scope once its lean function handed it over: the route's
# handler then goes straight to the generic one instead of asking again.
HANDED_OVER = "club.lean_handed_over"


def lean_route(lean: Lean) -> type[APIRoute]:
    class LeanRoute(APIRoute):
        lean_of_route = staticmethod(lean)

        def get_route_handler(
            self,
        ) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            generic = super().get_route_handler()

            async def handler(request: Request) -> Response:
                if request.scope.get(HANDED_OVER):
                    return await generic(request)
                answered = await lean(request)
                return answered if answered is not None else await generic(request)

            return handler

    return LeanRoute


def lean_of(route: object) -> Lean | None:
    """The lean function of a route `lean_route` made, else None."""
    lean: Lean | None = getattr(type(route), "lean_of_route", None)
    return lean
