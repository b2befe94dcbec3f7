"""`/ops/purchases/{id}`: the operator's page settles a purchase in manual review,
behind the page's session and CSRF token, against a real database."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest
from fastapi.testclient import TestClient

from entrypoints.ops.access import OpsConfig
from entrypoints.ops.page import OPERATOR
from entrypoints.ops.session import COOKIE, csrf_token, valid_session
from entrypoints.runtime.api import create_app
from tests.api_client import ClubClient
from tests.identity import ADMIN, VERIFIER

TOKEN = "operator-secret-token-0123456789abcdef"  # noqa: S105 - a test value
OPS = OpsConfig(operator_token=TOKEN, promise_seconds=10, email_rate_per_s=100)


@pytest.fixture(scope="module")
def app(container) -> object:
    return create_app(container, ops=OPS, hold_seconds=60, verifier=VERIFIER)


@pytest.fixture
def browser(app) -> Iterator[tuple[TestClient, str]]:
    """A logged-in browser and its session's CSRF token."""
    with TestClient(app, raise_server_exceptions=False) as client:
        login = client.post("/ops/login", data={"token": TOKEN}, follow_redirects=False)
        value = login.headers["set-cookie"].split(";")[0].split("=", 1)[1]
        session = valid_session(value, TOKEN)
        assert session is not None
        client.cookies.set(COOKIE, value)
        yield client, csrf_token(TOKEN, session)


def in_review(app, container) -> tuple[UUID, str]:
    with TestClient(app, headers=ADMIN) as api:
        client = ClubClient(api)
        lesson_id = client.paid_lesson(capacity=1)
        answer = client.reserve(lesson_id, client.student())
    purchase_id = UUID(answer.json()["purchase_id"])
    container.app.request_payment(
        purchase_id, next_check_at=datetime.now(UTC) + timedelta(hours=1)
    )
    container.app.require_review(purchase_id, reason="provider unsure", owner="o")
    return purchase_id, lesson_id


def test_the_page_shows_a_form_and_records_the_decision_with_who_and_why(
    app, container, browser
) -> None:
    client, csrf = browser
    purchase_id, _ = in_review(app, container)
    shown = client.get(f"/ops/purchases/{purchase_id}")
    assert shown.status_code == 200, shown.text
    assert "provider unsure" in shown.text
    assert f"action='/ops/purchases/{purchase_id}/resolve'" in shown.text
    assert f"value='{csrf}'" in shown.text
    form = {"decision": "cancel", "reason": "student asked", "csrf": csrf}
    done = client.post(
        f"/ops/purchases/{purchase_id}/resolve", data=form, follow_redirects=False
    )
    assert done.status_code == 303, done.text
    purchase = container.app.get_purchase(purchase_id)
    assert (purchase.status, purchase.resolution) == ("cancelled", "cancel")
    assert purchase.resolved_by == OPERATOR
    after = client.get(f"/ops/purchases/{purchase_id}")
    assert "--cancel by ops-page" in after.text
    assert "id='resolve'" not in after.text  # nothing left to settle
    again = client.post(f"/ops/purchases/{purchase_id}/resolve", data=form)
    assert again.status_code == 409
    assert "is cancelled" in again.text


def test_a_post_without_the_sessions_csrf_token_changes_nothing(
    app, container, browser
) -> None:
    client, _ = browser
    purchase_id, _ = in_review(app, container)
    forged = client.post(
        f"/ops/purchases/{purchase_id}/resolve",
        data={"decision": "refund", "reason": "x", "csrf": "0" * 64},
    )
    assert forged.status_code == 403
    assert container.app.get_purchase(purchase_id).status == "manual_review"


@pytest.mark.parametrize(
    ("form", "status"),
    [
        ({"decision": "steal", "reason": "x"}, 422),
        ({"decision": "cancel", "reason": "  "}, 422),
        ({"decision": "cancel", "reason": "ok\x1b[2Jcleared"}, 422),  # as the CLI
        ({"decision": "refund", "reason": "x"}, 409),  # nothing captured to refund
    ],
)
def test_a_form_that_cannot_be_recorded_is_refused_saying_why(
    app, container, browser, form, status
) -> None:
    client, csrf = browser
    purchase_id, _ = in_review(app, container)
    refused = client.post(
        f"/ops/purchases/{purchase_id}/resolve", data=form | {"csrf": csrf}
    )
    assert refused.status_code == status, refused.text
    assert container.app.get_purchase(purchase_id).status == "manual_review"
