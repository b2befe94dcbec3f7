"""`/readyz` answers anyone, so a flood of probes shares one check a second."""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
from fastapi.testclient import TestClient

from entrypoints.http.routes.health import CHECK_SHARED_FOR_S
from entrypoints.runtime.api import create_app
from tests.identity import VERIFIER


def test_a_flood_of_readiness_probes_costs_one_check_a_second(container) -> None:
    checks: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.strip() == "SELECT 1":
            checks.append(statement)

    sa.event.listen(container.engine, "before_cursor_execute", count)
    try:
        with TestClient(create_app(container, verifier=VERIFIER)) as api:
            flood = [api.get("/readyz") for _ in range(30)]
            time.sleep(CHECK_SHARED_FOR_S)
            later = api.get("/readyz")
    finally:
        sa.event.remove(container.engine, "before_cursor_execute", count)
    # No broker in this app: each answer says so, from the same shared check.
    assert {a.status_code for a in flood} == {503}
    assert {str(a.json()["checks"]) for a in flood} == {
        "{'database': True, 'nats': False}"
    }
    assert later.status_code == 503
    assert len(checks) == 2  # one for the flood, one a second later


def test_an_app_outliving_its_event_loop_checks_afresh(container) -> None:
    """A check belongs to the loop that ran it: a new loop (a restarted server, a
    test client after another) runs its own, never awaits another loop's."""
    app = create_app(container, verifier=VERIFIER)
    answers = []
    for _ in range(2):
        with TestClient(app) as api:
            answers.append(api.get("/readyz"))
    assert [a.status_code for a in answers] == [503, 503]  # no broker here
    assert [a.json()["checks"]["database"] for a in answers] == [True, True]
