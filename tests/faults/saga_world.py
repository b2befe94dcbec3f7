"""The purchase saga's fault-test world: a stack of real processes for one test,
and what a student (the API) and an auditor (the provider's ledger) see."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.api_client import ClubClient
from tests.identity import ADMIN
from tests.servers import scratch_dir
from tests.stack import FAST_FAULTS, FAST_SAGA, Stack, eventually


class World:
    """A stack of processes for one test, and what a student and an auditor see."""

    def __init__(self, migrated: tuple[str, str], prefix: str, **env: str) -> None:
        self.stack = Stack(
            *migrated, scratch_dir(prefix), **(FAST_FAULTS | FAST_SAGA | env)
        )
        self.base = self.stack.base

    def start(self, *names: str, **env: str) -> None:
        for name in names:
            role = "saga" if name.startswith("saga") else name
            self.stack.start(name, role=role, **env)
            if role == "saga":  # a hold of seconds must not run out before it is up
                log = self.stack.logs[name]
                eventually(lambda log=log: b"role.started" in log.read_bytes())

    def knobs(self, **values: object) -> None:
        answer = httpx.put(f"{self.stack.payment_url}/knobs", json=values)
        assert answer.status_code == 200, answer.text

    def lesson(self, capacity: int = 5) -> str:
        with ClubClient(self.base) as club:
            return club.paid_lesson(capacity=capacity)

    def reserve(self, lesson_id: str) -> httpx.Response:
        with ClubClient(self.base) as club:
            return club.reserve(lesson_id, club.student())

    def purchase(self, lesson_id: str) -> str:
        answer = self.reserve(lesson_id)
        assert answer.status_code == 201, answer.text
        return str(answer.json()["purchase_id"])

    def view(self, purchase_id: str) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(
            f"{self.base}/purchases/{purchase_id}", headers=ADMIN
        ).json()
        return body

    def lesson_seats(self, lesson_id: str) -> tuple[int, int]:
        body = httpx.get(f"{self.base}/lessons/{lesson_id}", headers=ADMIN).json()
        return body["seats_held"], body["seats_taken"]

    def until(self, purchase_id: str, *status: str, timeout: float = 30) -> Any:
        def reached() -> dict[str, Any] | None:
            view = self.view(purchase_id)
            return view if view["status"] in status else None

        return eventually(reached, timeout=timeout, interval=0.1)

    def ledger(self) -> dict[str, dict[str, Any]]:
        """The provider's payments by their key (`purchase-<id>`)."""
        answer = httpx.get(f"{self.stack.payment_url}/payments?limit=10000")
        return {p["idempotency_key"]: p for p in answer.json()["payments"]}

    def payment_of(self, purchase_id: str) -> dict[str, Any] | None:
        return self.ledger().get(f"purchase-{purchase_id}")

    def webhooks_sent(self) -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = httpx.get(
            f"{self.stack.payment_url}/webhooks", headers=ADMIN
        ).json()["webhooks"]
        return sent

    def close(self) -> None:
        for proc in self.stack.procs.values():
            proc.send_signal(signal.SIGCONT)  # a stopped process cannot stop
        self.stack.stop_all()


WorldFor = Callable[..., World]


@pytest.fixture
def world_for(migrated: tuple[str, str]) -> Iterator[WorldFor]:
    made: list[World] = []

    def make(prefix: str, **env: str) -> World:
        made.append(World(migrated, prefix, **env))
        return made[-1]

    yield make
    for world in made:
        world.close()
