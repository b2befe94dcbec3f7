"""Every request is answered within a deadline, even when the database is not.

A request already inside a read when PostgreSQL dies can wait the event-store
library's retries out (ten attempts, each bounded by the pool's wait): most of a
minute. Past the deadline the client gets 503 + Retry-After, the work carries on
in the background, and the Idempotency-Key recognises its outcome on the retry —
so answering early never loses or doubles an enrollment. A write sent without a
key is told the truth instead: its outcome is unknown, and a blind retry could
repeat it. The clock is kept by `edge.py`.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.types import Scope

from entrypoints.http.problems import RETRY_AFTER_S, problem

DEFAULT_DEADLINE_S = 5.0


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def late_answer(scope: Scope, seconds: float) -> Response:
    """503, and what a retry would do: only a read or a keyed request is safe to
    repeat; a keyless write may still take effect in the background."""
    keyed = any(name == b"idempotency-key" for name, _ in scope.get("headers", ()))
    waited = f"no answer within {seconds:g}s"
    if scope.get("method") in SAFE_METHODS or keyed:
        advice = "retry with the same Idempotency-Key" if keyed else "retry"
        return problem(
            503,
            "temporarily-unavailable",
            "Temporarily unavailable",
            f"{waited}; {advice}",
            headers={"Retry-After": RETRY_AFTER_S},
        )
    return problem(
        503,
        "outcome-unknown",
        "Outcome unknown",
        f"{waited}. The request may still take effect: check before sending it "
        "again, or send an Idempotency-Key so that a retry is recognised",
    )
