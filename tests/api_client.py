"""A small client of Club's HTTP API: the calls most end-to-end tests begin with."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any
from uuid import uuid4

import httpx

from tests.identity import ADMIN, as_student, as_teacher

STARTS_AT = "2026-12-01T10:00:00Z"
PAID_STARTS_AT = "2027-01-10T10:00:00Z"  # what the purchase tests sell


def bearer(token: str) -> dict[str, str]:
    """The header an operator's request carries (the CLUB_OPERATOR_TOKEN)."""
    return {"Authorization": f"Bearer {token}"}


class ClubClient:
    """`patient`: answer a 503 (a server just restarted, a queue full) by waiting its
    Retry-After and asking again, as a real client does; otherwise return it.
    `base` is a URL, or a client a test already has (FastAPI's TestClient), which
    the test keeps and closes itself."""

    def __init__(
        self,
        base: str | httpx.Client,
        *,
        timeout: float = 30,
        patient: bool = False,
        caller: dict[str, str] = ADMIN,
    ):
        self._owned = not isinstance(base, httpx.Client)
        self.http = (
            httpx.Client(base_url=base, timeout=timeout)
            if isinstance(base, str)
            else base
        )
        self.patient = patient
        self.caller = caller  # a raw request's Authorization; the helpers act as
        # the client each step belongs to (a student enrolls itself, a teacher
        # schedules lessons)

    def __enter__(self) -> ClubClient:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._owned:
            self.http.close()

    def request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        kw["headers"] = self.caller | kw.get("headers", {})
        for _ in range(10 if self.patient else 1):
            response = self.http.request(method, path, **kw)
            if response.status_code != 503:
                break
            time.sleep(float(response.headers.get("Retry-After", "1")))
        return response

    def student(self, *, email: str | None = None, name: str = "Ann") -> str:
        """A new student with a profile; returns its id."""
        student_id = f"s-{uuid4().hex[:10]}"
        profile = {"email": email or f"{student_id}@example.org", "name": name}
        response = self.request(
            "PUT", f"/students/{student_id}", json=profile,
            headers=as_student(student_id),
        )  # fmt: skip
        assert response.status_code in (200, 201), response.text
        return student_id

    def lesson(
        self,
        *,
        capacity: int = 3,
        title: str = "Yoga",
        price_cents: int | None = None,
        starts_at: str = STARTS_AT,
    ) -> str:
        """A new lesson, free unless priced; returns its id (and checks where the
        answer says it is)."""
        body: dict[str, object] = {
            "title": title, "capacity": capacity, "starts_at": starts_at,
        }  # fmt: skip
        if price_cents is not None:
            body["price_cents"] = price_cents
        response = self.request("POST", "/lessons", json=body, headers=as_teacher())
        assert response.status_code == 201, response.text
        lesson_id = str(response.json()["lesson_id"])
        assert response.headers["location"] == f"/lessons/{lesson_id}"
        return lesson_id

    def paid_lesson(self, *, capacity: int = 3, price_cents: int = 2500) -> str:
        """The lesson the purchase tests sell: "Intensive", 25.00 unless priced."""
        return self.lesson(
            capacity=capacity, title="Intensive", price_cents=price_cents,
            starts_at=PAID_STARTS_AT,
        )  # fmt: skip

    def reserve(
        self, lesson_id: str, student_id: str, key: str | None = None
    ) -> httpx.Response:
        """One purchase request (a held seat); a fresh Idempotency-Key unless given."""
        return self._for_student(f"/lessons/{lesson_id}/purchases", student_id, key)

    def enroll(
        self, lesson_id: str, student_id: str, key: str | None = None
    ) -> httpx.Response:
        """One enrollment request; a fresh Idempotency-Key unless one is given."""
        return self._for_student(f"/lessons/{lesson_id}/enrollments", student_id, key)

    def _for_student(
        self, path: str, student_id: str, key: str | None
    ) -> httpx.Response:
        return self.request(
            "POST",
            path,
            json={"student_id": student_id},
            headers={"Idempotency-Key": key or str(uuid4())} | as_student(student_id),
        )
