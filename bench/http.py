"""HTTP enrollment figures, and the in-process save they are compared with."""

from __future__ import annotations

import gc
import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from http.client import HTTPConnection
from urllib.parse import urlsplit
from uuid import UUID, uuid4

import httpx

from application.club import ClubApplication
from bench import peer_outbox, peer_plain
from bench.callers import students_authorizations
from bench.common import (
    Staged,
    new_lesson,
    percentiles,
    register,
    student_ids,
    students,
)
from domain.enrollment import Enrollment

HTTP_REQUESTS = 800  # per run, shared by the clients; at least 25 each
PER_CLIENT_AT_LEAST = 25  # 64 clients of a few requests each measured their start


def requests_for(clients: int) -> int:
    """A closed-loop run's requests: a few seconds of work, whatever the clients
    (at 400 a run, the same ratio moved by a third from one run to the next)."""
    return max(HTTP_REQUESTS, PER_CLIENT_AT_LEAST * clients)


SENDERS = 16  # open-loop sender threads, each with its own kept-alive connection


def http_enrollments(
    container, api: str, clients: int, *, one_lesson: bool = False
) -> Staged:
    """Closed-loop clients; `one_lesson`: all of them into the same (popular) class.
    Each student enrolls itself with its own token. What exists before anyone
    enrolls — the lessons, the students' profiles, their tokens — is made before
    the clock starts, as for the peers below."""
    per_client = requests_for(clients) // clients

    def prepare() -> tuple[list[UUID], list[str], list[str]]:
        who = register(container, student_ids(per_client * clients))
        if one_lesson:
            lessons = [new_lesson(container.app, per_client * clients)] * clients
        else:
            lessons = [new_lesson(container.app, per_client) for _ in range(clients)]
        return lessons, who, students_authorizations(who)

    def run(prepared: tuple[list[UUID], list[str], list[str]]) -> int:
        lessons, who, authorizations = prepared
        return closed_loop(api, lessons, who, authorizations=authorizations)

    return Staged(prepare, run)


def peer_enrollments(api: str, database_url: str, clients: int) -> Staged:
    """The same closed loop against the plain peer (bench.peer_plain)."""
    per_client = requests_for(clients) // clients

    def prepare() -> tuple[list[UUID], list[str]]:
        lessons = peer_plain.new_lessons(database_url, per_client, clients)
        return lessons, [f"p-{uuid4().hex[:12]}" for _ in range(per_client * clients)]

    def run(prepared: tuple[list[UUID], list[str]]) -> int:
        return closed_loop(api, *prepared)

    return Staged(prepare, run)


def outbox_peer_enrollments(api: str, database_url: str, clients: int) -> Staged:
    """The same closed loop against the hand-written outbox (bench.peer_outbox),
    each student with its own token, as for Club."""
    per_client = requests_for(clients) // clients

    def prepare() -> tuple[list[UUID], list[str], list[str]]:
        lessons = peer_outbox.new_lessons(database_url, per_client, clients)
        who = student_ids(per_client * clients)
        return lessons, who, students_authorizations(who)

    def run(prepared: tuple[list[UUID], list[str], list[str]]) -> int:
        lessons, who, authorizations = prepared
        return closed_loop(api, lessons, who, authorizations=authorizations)

    return Staged(prepare, run)


def closed_loop(
    api: str,
    lessons: Sequence[UUID],
    who: Sequence[str],
    *,
    authorizations: Sequence[str] | None = None,
) -> int:
    """One client per lesson, each enrolling its share of `who` one after another
    over a kept-alive connection; every answer must be a 201. `authorizations`:
    each student's `Authorization` value, in `who`'s order (the plain peer: none)."""
    clients = len(lessons)
    per_client = len(who) // clients

    def client(i: int) -> int:
        with httpx.Client(base_url=api, timeout=30) as http:
            for n in range(i * per_client, (i + 1) * per_client):
                headers = {"Idempotency-Key": str(uuid4())}
                if authorizations is not None:
                    headers["Authorization"] = authorizations[n]
                response = http.post(
                    f"/lessons/{lessons[i]}/enrollments",
                    json={"student_id": who[n]},
                    headers=headers,
                )
                assert response.status_code == 201, response.text
        return per_client

    with ThreadPoolExecutor(clients) as pool:
        return sum(pool.map(client, range(clients)))


def http_floor(api: str, clients: int) -> Callable[[], int]:
    """Closed-loop GETs of /healthz: what the HTTP stack alone (uvicorn, FastAPI,
    this client) allows on this machine, with no database work at all."""

    def work() -> int:
        per_client = requests_for(clients) // clients

        def client(_: int) -> int:
            with httpx.Client(base_url=api, timeout=30) as http:
                for _ in range(per_client):
                    assert http.get("/healthz").status_code == 200
            return per_client

        with ThreadPoolExecutor(clients) as pool:
            return sum(pool.map(client, range(clients)))

    return work


def raw_saves(
    app: ClubApplication, clients: int, total: int | None = None
) -> Callable[[], int]:
    """The same two aggregates saved by eventsourcing in-process: the floor.
    Each client saves into a lesson of its own, so only the store serialises them."""

    def work() -> int:
        per_client = (total or requests_for(clients)) // clients
        lessons = [new_lesson(app, per_client) for _ in range(clients)]

        def client(i: int) -> int:
            for n in range(per_client):
                lesson = app.get_lesson(lessons[i])
                enrollment_id = uuid4()
                lesson.take_seat(enrollment_id=enrollment_id, student_id=f"r-{n}")
                enrollment = Enrollment.confirm(
                    enrollment_id=enrollment_id, lesson_id=lesson.id,
                    student_id=f"r-{n}", request_id=str(enrollment_id),
                )  # fmt: skip
                app.save(lesson, enrollment)
            return per_client

        with ThreadPoolExecutor(clients) as pool:
            return sum(pool.map(client, range(clients)))

    return work


def steady_latencies(container, api: str, rate: float, count: int) -> dict[str, float]:
    lesson = new_lesson(container.app, count)
    latencies, window = steady(api, lesson, students(container, count), rate)
    return percentiles(latencies) | window


def steady(
    api: str, lesson: UUID, who: Sequence[str], rate: float
) -> tuple[list[float], dict[str, float]]:
    """Open loop: request i is sent at start + i / rate, whatever came before.
    Returns each request's latency in seconds, and the loop's window
    (`latencies_and_window`)."""
    return latencies_and_window(
        steady_posts(api, lesson, who, rate, students_authorizations(who))
    )


def latencies_and_window(
    posted: Sequence[tuple[float, float]],
) -> tuple[list[float], dict[str, float]]:
    """An open loop's (sent, answered) pairs as each request's latency in seconds,
    and the loop's window: `window_began`, the first send; `window_ended`, the
    last answer (unix seconds)."""
    window = {
        "window_began": min(began for began, _ in posted),
        "window_ended": max(ended for _, ended in posted),
    }
    return [ended - began for began, ended in posted], window


def steady_posts(
    api: str,
    lesson: UUID,
    who: Sequence[str],
    rate: float,
    authorizations: Sequence[str],
) -> list[tuple[float, float]]:
    """The open loop of enrollments: per student (in `who`'s order), when its
    request was sent and when its 201 came back (the commit), in unix seconds.
    Each student enrolls itself: `authorizations[i]` is who[i]'s `Authorization`
    value, signed by the caller before the loop starts."""
    path = f"/lessons/{lesson}/enrollments"

    def enroll(conn: HTTPConnection, i: int) -> None:
        conn.request(
            "POST",
            path,
            json.dumps({"student_id": who[i]}),
            {
                "Content-Type": "application/json",
                "Idempotency-Key": str(uuid4()),
                "Authorization": authorizations[i],
            },
        )
        response = conn.getresponse()
        body = response.read()
        assert response.status == 201, body

    return open_loop(api, rate, len(who), enroll)


def floor_latencies(api: str, rate: float, count: int) -> dict[str, float]:
    """The open loop of `GET /healthz`: the tail that the HTTP stack, this load
    generator and this machine allow at `rate` with no database work at all; the
    control beside the enrollment tail, measured the same way."""

    def health(conn: HTTPConnection, _: int) -> None:
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200, body

    latencies, window = latencies_and_window(open_loop(api, rate, count, health))
    return percentiles(latencies) | window


def open_loop(
    api: str, rate: float, count: int, request: Callable[[HTTPConnection, int], None]
) -> list[tuple[float, float]]:
    """Request i (`request(conn, i)`, which reads its whole answer) is sent at
    start + i / rate, whatever came before; returns when each was sent and
    answered, in unix seconds.

    Each sender thread keeps one connection alive, as a browser or a gateway would
    (a new TCP connection per request measured Nagle's delayed ACK, ~40 ms, not
    Club), through the standard library's `http.client`: the generator shares the
    two cores with what it measures, and httpx cost it 2.7-3.0 ms of CPU a request
    against 1.1-1.3 ms (80/s, bench.jobs's arrivals)."""
    done: list[tuple[float, float]] = [(0.0, 0.0)] * count
    where = urlsplit(api)
    held = threading.local()
    # The generator's own full collection, over the bench's whole heap, paused
    # every sender for 80-160 ms at a round's start and sent the overdue
    # requests as one burst (the first round's p99 over 25 ms in every run):
    # taken before the clock, and none while the loop runs.
    gc.collect()
    gc.disable()
    start = time.time() + 0.1

    def send(i: int) -> None:
        time.sleep(max(0.0, start + i / rate - time.time()))
        began = time.time()
        if not hasattr(held, "conn"):
            held.conn = HTTPConnection(where.hostname or "", where.port, timeout=30)
        request(held.conn, i)
        done[i] = (began, time.time())

    try:
        with ThreadPoolExecutor(SENDERS) as pool:
            list(pool.map(send, range(count)))
    finally:
        gc.enable()
    return done
