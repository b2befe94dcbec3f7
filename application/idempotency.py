"""Idempotent use cases: a request's answer commits with its effect, in one transaction.

A client that retries (lost reply, deadline, crash) sends the same key again. The
key, the events and the answer the first attempt gave are written in one
transaction of the event store, so the database itself recognises the repeat: a
second attempt that races the first fails on the key's uniqueness, rolls back, and
answers what the first one committed. There is no claim to expire, renew or release.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs


@attrs.frozen(kw_only=True)
class Request:
    """One client request as its key names it: the same key, the same request."""

    scope: str  # method and route template: keys of different routes never meet
    key: str
    fingerprint: str  # a hash of path and body: the same key with another body


@attrs.frozen(kw_only=True)
class Answer:
    """What the client was told; replayed verbatim to every retry."""

    status_code: int
    body: Any  # JSON
    headers: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class Recorded:
    """A stored answer and the fingerprint of the request that got it."""

    fingerprint: str
    answer: Answer


class KeyReusedError(Exception):
    """The key was used before with another request body."""

    def __init__(self, key: str) -> None:
        super().__init__(
            "this Idempotency-Key was used with another request body; use a new key"
        )
        self.key = key


# Maps a use case's outcome (a result or a rule error) to the answer to store;
# None means "do not store": a passing failure that a retry should run afresh.
AnswerFor = Callable[[object], Answer | None]


RequestId = tuple[str, str]  # (scope, key)


def request_id(request: Request) -> RequestId:
    return request.scope, request.key


def replay(request: Request, recorded: Recorded) -> Answer:
    """The first answer, if this is the same request."""
    if recorded.fingerprint != request.fingerprint:
        raise KeyReusedError(request.key)
    return recorded.answer
