"""Background enrollments over HTTP, and what the chain should end up holding."""

from __future__ import annotations

import asyncio
import threading
import time
from uuid import uuid4

import attrs
import httpx

from entrypoints.ops.confirmed_totals import confirmed_totals as totals_of
from entrypoints.runtime.bootstrap import Container, confirmed_counts
from tests.api_client import ClubClient
from tests.faults.facts import setup_lesson
from tests.integration.helpers import published, stream_messages, with_js


class Enroller(threading.Thread):
    """Enrolls students until `count` enrollments succeeded, retrying each key;
    spread over `at_least_s` seconds at least, so that faults meant to land while
    enrollments pour in still do on a fast machine."""

    def __init__(
        self, api: str, count: int, lessons: int = 4, at_least_s: float = 0.0
    ) -> None:
        super().__init__(daemon=True)
        self.api, self.count, self.at_least_s = api, count, at_least_s
        self.lessons = [setup_lesson(api, capacity=count) for _ in range(lessons)]
        self.created = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with ClubClient(self.api, timeout=10) as club:
                start = time.monotonic()
                for n in range(self.count):
                    due = start + self.at_least_s * n / self.count
                    time.sleep(max(0.0, due - time.monotonic()))
                    lesson_id, _ = self.lessons[n % len(self.lessons)]
                    self._enroll_until_answered(club, lesson_id, club.student())
        except BaseException as e:  # surfaced by the test, not lost in the thread
            self.error = e

    def _enroll_until_answered(
        self, club: ClubClient, lesson_id: str, student: str
    ) -> None:
        key = str(uuid4())
        for _ in range(50):  # keep the key until there is an answer
            try:
                r = club.enroll(lesson_id, student, key)
            except httpx.HTTPError:
                continue
            if r.status_code == 201:
                self.created += 1
                return
            assert r.status_code in (409, 503), r.text  # in flight, busy
        raise AssertionError(f"no answer for key {key}")


def expected_event_ids(container: Container) -> list[str]:
    return [str(e.event_id) for e in published(container)]


def stream_event_ids(nats_url: str) -> list[str]:
    async def ids(js, _) -> list[str]:
        return [m.headers["Nats-Msg-Id"] for m in await stream_messages(js)]

    return asyncio.run(with_js(nats_url, ids))


def confirmed_totals(container: Container) -> dict[str, int]:
    """As a dict, so that a failed comparison shows both counts."""
    return attrs.asdict(totals_of(confirmed_counts(container)))
