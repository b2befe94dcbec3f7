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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

# Answers a request the generic handler would accept, or None to hand it over.
Lean = Callable[[Request], Awaitable[Response | None]]


def lean_route(lean: Lean) -> type[APIRoute]:
    class LeanRoute(APIRoute):
        def get_route_handler(
            self,
        ) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            generic = super().get_route_handler()

            async def handler(request: Request) -> Response:
                answered = await lean(request)
                return answered if answered is not None else await generic(request)

            return handler

    return LeanRoute
