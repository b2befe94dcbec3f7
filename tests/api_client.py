"""A small client of Club's HTTP API: the calls most end-to-end tests begin with."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any
from uuid import uuid4

import httpx

STARTS_AT = "2026-12-01T10:00:00Z"


class ClubClient:
    """`patient`: answer a 503 (a server just restarted, a queue full) by waiting its
    Retry-After and asking again, as a real client does; otherwise return it."""

    def __init__(self, base: str, *, timeout: float = 30, patient: bool = False):
        self.http = httpx.Client(base_url=base, timeout=timeout)
        self.patient = patient

    def __enter__(self) -> ClubClient:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.http.close()

    def request(self, method: str, path: str, **kw: Any) -> httpx.Response:
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
        response = self.request("PUT", f"/students/{student_id}", json=profile)
        assert response.is_success, response.text
        return student_id

    def lesson(self, *, capacity: int = 3, title: str = "Yoga") -> str:
        """A new lesson; returns its id (and checks where the answer says it is)."""
        body = {"title": title, "capacity": capacity, "starts_at": STARTS_AT}
        response = self.request("POST", "/lessons", json=body)
        assert response.status_code == 201, response.text
        lesson_id = str(response.json()["lesson_id"])
        assert response.headers["location"] == f"/lessons/{lesson_id}"
        return lesson_id

    def enroll(
        self, lesson_id: str, student_id: str, key: str | None = None
    ) -> httpx.Response:
        """One enrollment request; a fresh Idempotency-Key unless one is given."""
        return self.request(
            "POST",
            f"/lessons/{lesson_id}/enrollments",
            json={"student_id": student_id},
            headers={"Idempotency-Key": key or str(uuid4())},
        )
