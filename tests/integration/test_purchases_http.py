"""The purchase routes and the payment webhook on a real database (no broker needed).

Each webhook here is signed (or forged) as the provider would; what the route
records, refuses and wakes is read back from PostgreSQL.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY

from adapters.postgres import webhooks
from adapters.postgres.tables import payment_webhooks, refused_webhooks, saga_deadlines
from application.payment import SIGNATURE_HEADER, Webhook, WebhookType, sign
from entrypoints.http.rate_limit import CallerLimit
from entrypoints.runtime.api import create_app
from tests.api_client import ClubClient
from tests.identity import ADMIN, VERIFIER

SECRET = "whsec_routes_0123456789"  # noqa: S105 - a test secret
HOLD_S = 60


@pytest.fixture(scope="module")
def api(container) -> Iterator[TestClient]:
    app = create_app(
        container, None, hold_seconds=HOLD_S, webhook_secret=SECRET, verifier=VERIFIER
    )
    with TestClient(app, headers=ADMIN) as client:
        yield client


def lesson(api: TestClient, *, capacity: int = 5, price_cents: int = 2500) -> str:
    return ClubClient(api).paid_lesson(capacity=capacity, price_cents=price_cents)


def student(api: TestClient) -> str:
    return ClubClient(api).student()


def reserve(api: TestClient, lesson_id: str, student_id: str, key: str | None = None):
    return ClubClient(api).reserve(lesson_id, student_id, key)


def post_webhook(api: TestClient, body: bytes, secret: str = SECRET, at: int = 0):
    header = sign(secret, body, at or int(time.time()))
    return api.post(
        "/webhooks/payment",
        content=body,
        headers={SIGNATURE_HEADER: header, "content-type": "application/json"},
    )


def captured(purchase_id: str, event_id: str, payment_id: str = "pay_1") -> bytes:
    return Webhook(
        event_id=event_id,
        type=WebhookType.PAYMENT_CAPTURED,
        payment_id=payment_id,
        idempotency_key=f"purchase-{purchase_id}",
        reference=purchase_id,
        amount_cents=2500,
        occurred_at=datetime.now(UTC),
    ).to_json()


def count(container, table: sa.Table) -> int:
    with container.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar())


def refusals(reason: str) -> float:
    """The counter /metrics serves (the API's process is this one)."""
    value = REGISTRY.get_sample_value(
        "club_payment_webhooks_refused_total", {"reason": reason}
    )
    return value or 0.0


def due_at(container, purchase_id: str) -> datetime | None:
    with container.engine.connect() as conn:
        return conn.execute(
            sa.select(saga_deadlines.c.due_at).where(
                saga_deadlines.c.purchase_id == UUID(purchase_id)
            )
        ).scalar()


def test_a_reservation_holds_a_seat_answers_201_and_wakes_the_saga(
    api, container
) -> None:
    lesson_id, student_id, key = lesson(api), student(api), uuid4().hex
    first = reserve(api, lesson_id, student_id, key)
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["status"] == "reserved"
    assert body["price_cents"] == 2500
    assert body["seat_held"] is True
    assert first.headers["location"] == f"/purchases/{body['purchase_id']}"
    held_until = datetime.fromisoformat(body["hold_expires_at"])
    assert timedelta(seconds=HOLD_S - 5) < held_until - datetime.now(UTC)
    assert api.get(f"/lessons/{lesson_id}").json()["seats_held"] == 1
    # Due now: the saga's first step (the charge) is not left to the log feed.
    due = due_at(container, body["purchase_id"])
    assert due is not None
    assert due <= datetime.now(UTC)
    again = reserve(api, lesson_id, student_id, key)
    assert (again.status_code, again.json()) == (201, body)
    assert api.get(f"/lessons/{lesson_id}").json()["seats_held"] == 1
    read = api.get(f"/purchases/{body['purchase_id']}").json()
    assert read["status"] == "reserved"
    assert "held until" in read["next_step"]


@pytest.mark.parametrize(
    ("case", "status", "slug"),
    [
        ("no key", 400, "idempotency-key-missing"),
        ("unknown student", 422, "unknown-student"),
        ("free lesson", 422, "invalid-purchase"),
        ("full lesson", 409, "lesson-full"),
        ("no lesson", 404, "not-found"),
        ("key reused", 422, "idempotency-key-reused"),
    ],
)
def test_a_refused_reservation_is_a_problem_naming_why(
    api, case: str, status: int, slug: str
) -> None:
    lesson_id, student_id = lesson(api, capacity=1), student(api)
    headers = {"Idempotency-Key": uuid4().hex}
    if case == "no key":
        headers = {}
    elif case == "unknown student":
        student_id = "nobody-here"
    elif case == "free lesson":
        lesson_id = lesson(api, price_cents=0)
    elif case == "full lesson":
        assert reserve(api, lesson_id, student(api)).status_code == 201
    elif case == "no lesson":
        lesson_id = str(uuid4())
    elif case == "key reused":
        assert reserve(api, lesson_id, student(api), headers["Idempotency-Key"])
    answer = api.post(
        f"/lessons/{lesson_id}/purchases",
        json={"student_id": student_id},
        headers=headers,
    )
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["type"] == f"/problems/{slug}"


def test_an_unknown_purchase_is_404(api) -> None:
    answer = api.get(f"/purchases/{uuid4()}")
    assert answer.status_code == 404
    assert answer.json()["type"] == "/problems/not-found"


@pytest.mark.parametrize(
    "forgery", ["wrong secret", "no header", "another body", "too old"]
)
def test_a_webhook_with_a_bad_signature_is_401_recorded_and_changes_nothing(
    api, container, forgery: str
) -> None:
    purchase_id = reserve(api, lesson(api), student(api)).json()["purchase_id"]
    body = captured(purchase_id, f"evt_{uuid4().hex}")
    before = count(container, refused_webhooks)
    counted = refusals("bad-signature")
    if forgery == "no header":
        answer = api.post("/webhooks/payment", content=body)
    elif forgery == "another body":
        header = sign(SECRET, body, int(time.time()))
        answer = api.post(
            "/webhooks/payment",
            content=body.replace(b"2500", b"9999"),
            headers={SIGNATURE_HEADER: header},
        )
    elif forgery == "too old":
        answer = post_webhook(api, body, at=int(time.time()) - 3600)
    else:
        answer = post_webhook(api, body, secret="whsec_guessed")  # noqa: S106 - a forgery
    assert answer.status_code == 401, answer.text
    assert answer.json()["type"] == "/problems/bad-signature"
    assert count(container, refused_webhooks) == before + 1
    assert refusals("bad-signature") == counted + 1
    assert api.get(f"/purchases/{purchase_id}").json()["status"] == "reserved"


def test_a_signed_but_unreadable_webhook_is_422_and_recorded(api, container) -> None:
    before = count(container, refused_webhooks)
    answer = post_webhook(api, b'{"id": "evt_x", "type": "payment.teleported"}')
    assert answer.status_code == 422
    assert answer.json()["type"] == "/problems/unreadable-webhook"
    assert count(container, refused_webhooks) == before + 1


def test_a_capture_is_recorded_once_deduped_by_event_id_and_wakes_the_saga(
    api, container
) -> None:
    purchase_id = reserve(api, lesson(api), student(api)).json()["purchase_id"]
    container.app.request_payment(
        UUID(purchase_id), next_check_at=datetime.now(UTC) + timedelta(hours=1)
    )
    event_id = f"evt_{uuid4().hex}"
    before = count(container, payment_webhooks)
    first = post_webhook(api, captured(purchase_id, event_id))
    assert first.status_code == 200, first.text
    assert first.json() == {
        "event_id": event_id,
        "outcome": "recorded; purchase captured",
        "duplicate": False,
    }
    view = api.get(f"/purchases/{purchase_id}").json()
    # Only the fact: access is the saga's decision, not the webhook's.
    assert (view["status"], view["payment_id"]) == ("captured", "pay_1")
    assert view["enrollment_id"] is None
    version = view["version"]
    again = post_webhook(api, captured(purchase_id, event_id))
    assert again.json()["duplicate"] is True
    assert api.get(f"/purchases/{purchase_id}").json()["version"] == version
    assert count(container, payment_webhooks) == before + 1
    due = due_at(container, purchase_id)
    assert due is not None
    assert due <= datetime.now(UTC)


def test_a_fact_the_purchase_refuses_is_kept_as_the_outcome(api, container) -> None:
    purchase_id = reserve(api, lesson(api), student(api)).json()["purchase_id"]
    container.app.request_payment(
        UUID(purchase_id), next_check_at=datetime.now(UTC) + timedelta(hours=1)
    )
    assert post_webhook(api, captured(purchase_id, f"evt_{uuid4().hex}")).is_success
    other = post_webhook(
        api, captured(purchase_id, f"evt_{uuid4().hex}", payment_id="pay_forged")
    )
    assert other.status_code == 200
    assert other.json()["outcome"].startswith("refused: ")
    assert api.get(f"/purchases/{purchase_id}").json()["payment_id"] == "pay_1"


def test_a_webhook_naming_no_purchase_of_ours_records_nothing(api) -> None:
    body = Webhook(
        event_id=f"evt_{uuid4().hex}",
        type=WebhookType.PAYMENT_CAPTURED,
        payment_id="pay_x",
        idempotency_key="someone-elses-key",
        reference="x",
        amount_cents=100,
        occurred_at=datetime.now(UTC),
    ).to_json()
    answer = post_webhook(api, body)
    assert answer.status_code == 200
    assert answer.json()["outcome"] == "no such purchase"


def late_payment(api, container, lesson_id: str) -> str:
    """A purchase whose hold expired, then paid: an alternative is on offer."""
    purchase_id = reserve(api, lesson_id, student(api)).json()["purchase_id"]
    purchases, pid = container.app, UUID(purchase_id)
    now = datetime.now(UTC)
    purchases.request_payment(pid, next_check_at=now + timedelta(hours=1))
    purchases.expire_hold(pid, now=now + timedelta(seconds=HOLD_S + 1))
    purchases.record_payment_captured(pid, payment_id="pay_late", amount_cents=2500)
    purchases.offer_alternative(pid, offer_expires_at=now + timedelta(hours=1))
    return purchase_id


def test_consent_to_an_alternative_buys_a_seat_there_and_never_adds_one(
    api, container
) -> None:
    first, second = lesson(api, capacity=2), lesson(api, capacity=1)
    purchase_id = late_payment(api, container, first)
    view = api.get(f"/purchases/{purchase_id}").json()
    assert view["status"] == "alternative_offered"
    assert api.get(f"/lessons/{first}").json()["seats_held"] == 0  # not revived
    pricier = lesson(api, price_cents=9900)
    refused = api.post(
        f"/purchases/{purchase_id}/alternative", json={"lesson_id": pricier}
    )
    assert refused.status_code == 422
    assert refused.json()["type"] == "/problems/alternative-price"
    taken = api.post(
        f"/purchases/{purchase_id}/alternative", json={"lesson_id": second}
    )
    assert taken.status_code == 200, taken.text
    assert taken.json()["status"] == "alternative_accepted"
    new_id = taken.json()["alternative_purchase_id"]
    assert api.get(f"/purchases/{new_id}").json()["status"] == "confirmed"
    assert api.get(f"/lessons/{second}").json()["seats_taken"] == 1
    # The same consent again answers the same; the full lesson gets no extra seat.
    again = api.post(
        f"/purchases/{purchase_id}/alternative", json={"lesson_id": second}
    )
    assert again.json()["alternative_purchase_id"] == new_id
    assert api.get(f"/lessons/{second}").json()["seats_taken"] == 1


def test_consent_without_an_offer_is_409(api) -> None:
    purchase_id = reserve(api, lesson(api), student(api)).json()["purchase_id"]
    answer = api.post(
        f"/purchases/{purchase_id}/alternative", json={"lesson_id": lesson(api)}
    )
    assert answer.status_code == 409
    assert answer.json()["type"] == "/problems/purchase-state"


def test_consent_to_a_full_lesson_is_409_and_the_offer_stands(api, container) -> None:
    full = lesson(api, capacity=1)
    assert reserve(api, full, student(api)).status_code == 201
    purchase_id = late_payment(api, container, lesson(api))
    answer = api.post(f"/purchases/{purchase_id}/alternative", json={"lesson_id": full})
    assert answer.status_code == 409
    assert answer.json()["type"] == "/problems/lesson-full"
    assert (
        api.get(f"/purchases/{purchase_id}").json()["status"] == "alternative_offered"
    )


def test_the_purchase_routes_are_in_the_openapi_document_with_their_problems(
    api,
) -> None:
    spec = api.get("/openapi.json").json()
    ops = {
        op["operationId"]: op
        for item in spec["paths"].values()
        for op in item.values()
        if isinstance(op, dict) and "operationId" in op
    }
    expected = {
        "reserve_purchase": {"400", "404", "409", "413", "422", "503"},
        "get_purchase": {"404", "422", "503"},
        "accept_alternative": {"404", "409", "413", "422", "503"},
        "payment_webhook": {"401", "413", "422", "503"},
    }
    for operation_id, statuses in expected.items():
        responses = ops[operation_id]["responses"]
        assert statuses <= set(responses), operation_id
        for status in statuses:
            assert set(responses[status]["content"]) == {"application/problem+json"}
    links = ops["reserve_purchase"]["responses"]["201"]["links"]
    assert {link["operationId"] for link in links.values()} == {
        "get_purchase",
        "accept_alternative",
    }
    key = next(
        p
        for p in ops["reserve_purchase"]["parameters"]
        if p["name"] == "Idempotency-Key"
    )
    assert key["required"] is True
    signature = next(
        p for p in ops["payment_webhook"]["parameters"] if p["name"] == "Club-Signature"
    )
    assert signature["required"] is True


@pytest.mark.parametrize(
    "header",
    [
        "t=²,v1=abc",
        "t=١٢٣,v1=abc",
        "t=9" * 40,
        "v1=" + "a" * 5000,
        "t=\x00,v1=\x00",
        "é",
    ],
)
def test_any_bytes_in_a_signature_header_are_401(api, header: str) -> None:
    """Unicode digits passed str.isdigit() and crashed int(): a 500 for anyone."""
    body = b'{"id": "evt_x"}'
    answer = api.post(
        "/webhooks/payment",
        content=body,
        headers={SIGNATURE_HEADER: header.encode("utf-8")},  # as the wire has it
    )
    assert answer.status_code == 401, answer.text


def test_refusals_keep_a_bounded_sample_and_a_forger_is_rate_limited(
    container, monkeypatch
) -> None:
    monkeypatch.setattr(webhooks, "REFUSALS_KEPT", 3)
    app = create_app(
        container, webhook_secret=SECRET, verifier=VERIFIER,
        rate_limit=CallerLimit("6/minute"),
    )  # fmt: skip
    with TestClient(app) as forger:
        answers = [forger.post("/webhooks/payment", content=b"{}") for _ in range(7)]
        kept = count(container, refused_webhooks)
    assert [a.status_code for a in answers] == [401] * 6 + [429]
    assert kept == 3  # the newest three; the counter counts every refusal


def test_a_capture_webhook_with_an_unusable_payment_id_sends_its_purchase_to_review(
    api, container
) -> None:
    purchase_id = reserve(api, lesson(api), student(api)).json()["purchase_id"]
    container.app.request_payment(
        UUID(purchase_id), next_check_at=datetime.now(UTC) + timedelta(hours=1)
    )
    before = count(container, refused_webhooks)
    body = captured(purchase_id, f"evt_{uuid4().hex}", payment_id="p" * 300)
    for _ in range(2):  # a redelivery changes nothing more
        answer = post_webhook(api, body)
        assert answer.status_code == 422, answer.text
        assert "payment id has 300 characters" in answer.json()["detail"]
    view = api.get(f"/purchases/{purchase_id}").json()
    assert view["status"] == "manual_review"
    assert view["review_reason"].startswith("unusable webhook: payment.captured")
    assert "payment id has 300 characters" in view["review_reason"]
    assert view["payment_id"] is None  # nothing stored as it came
    assert count(container, refused_webhooks) == before + 2
