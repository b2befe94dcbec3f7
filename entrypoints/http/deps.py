"""What every route may ask for: the container, and the Idempotency-Key header."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from entrypoints.config.container import Container
from entrypoints.http.idempotent import MAX_KEY_LENGTH


async def _container(request: Request) -> Container:
    # async: FastAPI runs a plain `def` dependency in its thread pool, a second
    # hand-off per request for an attribute read (~5% of an enrollment's API CPU).
    container: Container = request.app.state.container
    return container


ContainerDep = Annotated[Container, Depends(_container)]

_KEY_DOC = (
    "Names this attempt: a retry with the same key and body gets the first answer."
)
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=MAX_KEY_LENGTH,
        description=f"Optional here. {_KEY_DOC}",
    ),
]
RequiredIdempotencyKey = Annotated[
    str,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=MAX_KEY_LENGTH,
        description=f"Required. {_KEY_DOC}",
    ),
]
