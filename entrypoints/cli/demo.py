"""`club demo`: a lesson with students enrolled, so a newcomer has something to see.

The command is a client of the running API (`club up`), acting through tokens as
clients do: a teacher schedules the lesson, each student registers and enrolls
itself with a token of its own, as the README's curl lines do (contract §4.1).

The builders above `run_demo` seed the data of the benchmarks and the tests through
the application directly: one place says what scheduling a lesson, registering a
student and enrolling take.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import Any
from uuid import UUID, uuid4

import urllib3
from urllib3.exceptions import HTTPError

from adapters.identity.tokens import sign
from application.club import ClubApplication
from application.commands import EnrollStudent, ScheduleLesson
from application.identity import Role
from application.ports import StudentDirectory
from domain.student import StudentProfile
from entrypoints.config.auth_settings import AuthSettingError, signing_secret
from entrypoints.config.container import Container
from entrypoints.config.exposure import WILDCARDS
from entrypoints.config.settings import ConfigError, Settings

STARTS_AT = datetime(2026, 12, 1, 10, tzinfo=UTC)
MOST_STUDENTS = 1000  # a demo, not a load generator: bench/ drives load


def schedule_lesson(
    app: ClubApplication,
    *,
    capacity: int,
    title: str = "Yoga",
    starts_at: datetime = STARTS_AT,
    price_cents: int = 0,
) -> UUID:
    return app.schedule_lesson(
        ScheduleLesson(
            lesson_id=uuid4(),
            title=title,
            capacity=capacity,
            starts_at=starts_at,
            price_cents=price_cents,
        )
    )


def register_students(
    directory: StudentDirectory,
    count: int,
    *,
    prefix: str = "s",
    domain: str = "example.org",
) -> list[str]:
    """`count` new profiles, each with an address of its own: `<id>@<domain>`."""
    ids = [f"{prefix}-{uuid4().hex[:10]}" for _ in range(count)]
    for student_id in ids:
        directory.save(
            StudentProfile.create(
                student_id=student_id, email=f"{student_id}@{domain}", name="Ann"
            )
        )
    return ids


def enroll_all(
    app: ClubApplication, lesson_id: UUID, students: Iterable[str]
) -> list[UUID]:
    """Each student into the lesson, one request each (the student id is its key)."""
    return [
        app.enroll(
            EnrollStudent(lesson_id=lesson_id, student_id=s, request_id=s)
        ).enrollment_id
        for s in students
    ]


def lesson_with_enrollments(container: Container, enrollments: int) -> UUID:
    """A lesson just large enough, with `enrollments` new students enrolled."""
    lesson_id = schedule_lesson(container.app, capacity=max(enrollments, 1))
    enroll_all(
        container.app, lesson_id, register_students(container.students, enrollments)
    )
    return lesson_id


def _student_count(raw: str) -> int:
    count = int(raw) if raw.isdigit() else -1
    if not 0 <= count <= MOST_STUDENTS:
        msg = f"give a whole number from 0 to {MOST_STUDENTS}, not {raw!r}"
        raise argparse.ArgumentTypeError(msg)
    return count


# -- the command: a client of the running API ------------------------------------

TEACHER = "demo-teacher"  # who schedules the demo's lesson (the roster is theirs)
TOKEN_TTL_S = 3600  # as `club token`'s default: the printed roster line works an hour
TIMEOUT = urllib3.Timeout(connect=2.0, read=30.0)
MOST_TRIES = 5  # a 429 or 503 is waited out (its Retry-After) this many times
LONGEST_WAIT_S = 5.0
PASSING = frozenset({HTTPStatus.TOO_MANY_REQUESTS, HTTPStatus.SERVICE_UNAVAILABLE})


class ApiUnreachableError(Exception):
    """Nothing answers at the API's address: `club up` is not running there."""


class ApiRefusedError(Exception):
    """The API answered 4xx or 5xx; the message names the request and its problem."""


def api_base(settings: Settings) -> str:
    """Where `club up` serves the API: CLUB_HTTP_HOST (a wildcard bind is reached on
    loopback) and CLUB_HTTP_PORT, as `club up` announces it."""
    host = settings.http_host.strip("[]")
    host = "127.0.0.1" if host in WILDCARDS else host
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.http_port}"


class _Api:
    """One caller's view of the API: a bearer token on every request; a 429 or 503
    waited out and sent again (safe: PUTs are idempotent, POSTs carry a key)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._http = urllib3.PoolManager(maxsize=1, timeout=TIMEOUT, retries=False)

    def check_reachable(self) -> None:
        try:
            answer = self._http.request("GET", f"{self.base}/healthz")
        except HTTPError:
            raise ApiUnreachableError from None
        if answer.status != HTTPStatus.OK:  # another server holds the port
            msg = f"GET /healthz answered {answer.status}"
            raise ApiUnreachableError(msg)

    def call(
        self,
        method: str,
        path: str,
        token: str,
        body: dict[str, Any] | None = None,
        *,
        key: str | None = None,
    ) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if key is not None:
            headers["Idempotency-Key"] = key
        data = None if body is None else json.dumps(body).encode()
        tries = 0
        while True:
            tries += 1
            try:
                answer = self._http.request(
                    method, self.base + path, body=data, headers=headers
                )
            except HTTPError as e:
                msg = f"{method} {path}: no answer from {self.base} ({e})"
                raise ApiRefusedError(msg) from None
            if answer.status < HTTPStatus.BAD_REQUEST:
                return _json_object(method, path, answer)
            if answer.status not in PASSING or tries == MOST_TRIES:
                raise ApiRefusedError(_refusal(method, path, answer))
            time.sleep(_wait_s(answer.headers.get("Retry-After")))

    def close(self) -> None:
        self._http.clear()


def _json_object(
    method: str, path: str, answer: urllib3.BaseHTTPResponse
) -> dict[str, Any]:
    try:
        found = json.loads(answer.data)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        msg = f"{method} {path} answered {answer.status} without a JSON object"
        raise ApiRefusedError(msg)
    return found


def _refusal(method: str, path: str, answer: urllib3.BaseHTTPResponse) -> str:
    """`POST /lessons answered 403 Forbidden: <detail>`, from its problem details."""
    try:
        problem = json.loads(answer.data)
    except ValueError:
        problem = None
    problem = problem if isinstance(problem, dict) else {}
    title = str(problem.get("title") or answer.reason or "")
    detail = " ".join(str(problem.get("detail") or "").split())[:300]
    said = f"{method} {path} answered {answer.status} {title}".rstrip()
    return f"{said}: {detail}" if detail else said


def _wait_s(retry_after: str | None) -> float:
    try:
        return min(max(float(retry_after or 1), 0.1), LONGEST_WAIT_S)
    except ValueError:
        return 1.0


class _Signer:
    """Tokens signed as `club token` signs them: CLUB_AUTH_SECRET, else the one
    `club up` made in CLUB_DATA_DIR (entrypoints/config/auth_settings.py)."""

    def __init__(self, settings: Settings) -> None:
        try:
            self._secret = signing_secret(settings.auth, settings.data_dir).encode()
        except AuthSettingError as e:
            raise ConfigError(str(e)) from None
        self._audience = settings.auth.audience
        self._issuer = settings.auth.issuer or None

    def token(self, sub: str, role: Role) -> str:
        return sign(
            self._secret,
            sub=sub,
            roles=[role.value],
            ttl_s=TOKEN_TTL_S,
            audience=self._audience,
            issuer=self._issuer,
        )


def _demo_through(api: _Api, signer: _Signer, students: int) -> tuple[str, str, int]:
    """The lesson's id, its teacher's token and the seats taken, as the API says."""
    teacher = signer.token(TEACHER, Role.TEACHER)
    starts = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    lesson = api.call(
        "POST",
        "/lessons",
        teacher,
        {
            "title": "Yoga",
            "capacity": max(students, 1),
            "starts_at": (starts + timedelta(days=7)).isoformat(),
            "price_cents": 0,
        },
        key=str(uuid4()),
    )
    lesson_id = str(lesson["lesson_id"])
    for n in range(1, students + 1):
        student_id = f"s-{uuid4().hex[:10]}"
        token = signer.token(student_id, Role.STUDENT)
        profile = {"email": f"{student_id}@example.org", "name": f"Student {n}"}
        api.call("PUT", f"/students/{student_id}", token, profile)
        api.call(
            "POST",
            f"/lessons/{lesson_id}/enrollments",
            token,
            {"student_id": student_id},
            key=str(uuid4()),
        )
    seats = api.call("GET", f"/lessons/{lesson_id}", teacher)["seats_taken"]
    return lesson_id, teacher, int(seats)


def run_demo(settings: Settings, args: argparse.Namespace) -> int:
    api = _Api(api_base(settings))
    try:
        try:
            api.check_reachable()
        except ApiUnreachableError as e:
            why = f" ({e})" if str(e) else ""
            sys.stderr.write(
                f"club: no Club API answers at {api.base}{why}; start `club up` "
                "first (CLUB_HTTP_HOST and CLUB_HTTP_PORT say where it listens)\n"
            )
            return 2
        signer = _Signer(settings)
        try:
            lesson_id, teacher, seats = _demo_through(api, signer, args.students)
        except ApiRefusedError as e:
            sys.stderr.write(f"club: demo stopped: {e}\n")
            return 1
    finally:
        api.close()
    sys.stdout.write(
        f"lesson {lesson_id}: {args.students} student(s) registered and enrolled, "
        f"{seats} seat(s) taken\n"
        f"  roster (its teacher, {TEACHER}): curl {api.base}/lessons/{lesson_id}/roster"
        f' -H "authorization: Bearer {teacher}"\n'
    )
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser(
        "demo", help="a lesson with students enrolled through the running API"
    )
    demo.add_argument(
        "--students",
        type=_student_count,
        default=3,
        metavar="N",
        help=f"how many students to enroll (0 to {MOST_STUDENTS}; default 3)",
    )
    demo.set_defaults(run=run_demo)
