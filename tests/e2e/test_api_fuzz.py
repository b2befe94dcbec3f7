"""Arbitrary text, numbers and dates over HTTP, through both projections and a rebuild.

Every request is answered 2xx or 4xx, never 5xx; and whatever was accepted reaches
every read model: the live ones, and the ones rebuilt from the event store. Nothing
accepted may jam a consumer or end in the dead-letter stream.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from application.contracts.events import (
    EnrollmentCancelledV1,
    EnrollmentConfirmedV2,
    LessonScheduledV1,
)
from application.contracts.mapping import decode
from projections import rosters, statistics
from tests.identity import ADMIN
from tests.integration.helpers import published
from tests.stack import Stack, eventually

# Any code point, lone surrogates and controls included: JSON can carry them all.
anything = st.characters(codec=None, categories=None, exclude_categories=())
# Storable-looking text: any assigned or unassigned code point but the controls,
# so accepted input is as odd as it gets (combining marks, joiners, private use).
printable = st.characters(codec="utf-8", exclude_categories=["Cc", "Cs", "Zl", "Zp"])
unstorable = st.sampled_from("\u0000\u0007\t\n\u0085\u2028\u2029\ud800\udfff")
odd_texts = st.text(printable, min_size=1, max_size=30)
hostile_texts = st.one_of(
    st.builds(
        lambda head, bad, tail: head + bad + tail,
        st.text(printable, max_size=8),
        unstorable,
        st.text(printable, max_size=8),
    ),
    st.text(anything, max_size=12),
    st.text(st.sampled_from(" \u00a0\u2003\u3000\u0301"), max_size=4),
    st.text(st.characters(codec="ascii"), min_size=195, max_size=260),
)


def utc_offsets(hours: int) -> st.SearchStrategy[timezone]:
    minutes = st.integers(-hours * 60, hours * 60)
    return minutes.map(lambda m: timezone(timedelta(minutes=m)))


window = {
    "min_value": datetime(2000, 1, 1),  # noqa: DTZ001 - the offset comes next
    "max_value": datetime(8999, 12, 31, 23, 59, 59),  # noqa: DTZ001
}
edge_years = st.builds(
    datetime,
    year=st.sampled_from([1, 2, 1999, 9000, 9998, 9999]),
    month=st.sampled_from([1, 12]),
    day=st.sampled_from([1, 31]),
    hour=st.integers(0, 23),
    tzinfo=utc_offsets(23),
)
hostile_numbers = st.one_of(
    st.integers(),
    st.integers(min_value=10**15),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=4),
)
keys = st.from_regex(r"[!-~]{1,40}", fullmatch=True)

# Each field: (what a client means to send, what a hostile one sends).
FIELDS: dict[str, tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]] = {
    "student_id": (
        st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,12}", fullmatch=True),
        st.one_of(
            st.from_regex(r"[a-z]{1,6}\n", fullmatch=True),
            st.text(anything, min_size=1, max_size=8),
        ),
    ),
    "email": (
        st.from_regex(
            r"[a-z0-9._%+-]{1,20}@[a-z0-9-]{1,20}\.[a-z]{2,6}", fullmatch=True
        ),
        st.one_of(
            st.builds("{}@{}.org".format, hostile_texts, odd_texts),
            st.builds("{}@{}.org".format, odd_texts, hostile_texts),
            hostile_texts,
        ),
    ),
    "name": (odd_texts, hostile_texts),
    "title": (odd_texts, hostile_texts),
    "capacity": (st.integers(1, 5), hostile_numbers),
    "starts_at": (
        st.datetimes(**window, timezones=utc_offsets(14)).map(datetime.isoformat),
        st.one_of(
            edge_years.map(datetime.isoformat),
            st.datetimes(**window, timezones=utc_offsets(23)).map(datetime.isoformat),
            st.datetimes().map(datetime.isoformat),  # naive
            st.integers(),
            hostile_texts,
        ),
    ),
    "price_cents": (st.integers(0, 100_000_000), hostile_numbers),
    "enroll_key": (keys, st.sampled_from([None, "", "k" * 256])),
}


@st.composite
def visits(draw: st.DrawFn) -> dict[str, Any]:
    """One visit's input: at most one hostile field, so that field meets valid ones
    and reaches as deep as the API lets it (about half the visits are all valid)."""
    names = list(FIELDS)
    pick = draw(st.integers(0, 2 * len(names) - 1))
    hostile = names[pick] if pick < len(names) else None
    visit = {name: draw(FIELDS[name][name == hostile]) for name in names}
    visit["lesson_key"] = draw(st.one_of(st.none(), keys))
    visit["cancel"] = draw(st.booleans())
    return visit


def post(http: httpx.Client, path: str, body: Any, key: str | None) -> httpx.Response:
    # json.dumps escapes a lone surrogate as "\ud800": valid JSON, unencodable text.
    headers = {"content-type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return http.post(path, content=json.dumps(body).encode(), headers=headers)


def answered(response: httpx.Response, seen: Counter[int]) -> httpx.Response:
    seen[response.status_code] += 1
    assert response.status_code < 500, (response.request.url, response.text)
    if response.status_code >= 400:
        assert response.headers["content-type"] == "application/problem+json"
    return response


def test_arbitrary_input_never_5xx_and_every_accepted_event_reaches_the_models(
    stack, migrated, container_for
) -> None:
    seen: Counter[int] = Counter()

    @settings(
        max_examples=100,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.data_too_large],
    )
    @given(visit=visits())
    def one_visit(visit: dict[str, Any]) -> None:
        student_id = visit["student_id"]
        with httpx.Client(base_url=stack.base, timeout=30, headers=ADMIN) as http:
            path = f"/students/{quote(student_id, safe='', errors='surrogatepass')}"
            profile = http.put(
                path,
                content=json.dumps(
                    {"email": visit["email"], "name": visit["name"]}
                ).encode(),
                headers={"content-type": "application/json"},
            )
            answered(profile, seen)
            lesson = {
                k: visit[k] for k in ("title", "capacity", "starts_at", "price_cents")
            }
            created = answered(
                post(http, "/lessons", lesson, visit["lesson_key"]), seen
            )
            if created.status_code != 201:
                return
            lesson_id = created.json()["lesson_id"]
            answered(http.get(f"/lessons/{lesson_id}"), seen)
            enroll_path = f"/lessons/{lesson_id}/enrollments"
            body = {"student_id": student_id}
            enrolled = answered(
                post(http, enroll_path, body, visit["enroll_key"]), seen
            )
            if enrolled.status_code == 201 and visit["cancel"]:
                enrollment_id = enrolled.json()["enrollment_id"]
                answered(http.post(f"/enrollments/{enrollment_id}/cancel"), seen)
            answered(
                http.get(f"{enroll_path.removesuffix('/enrollments')}/roster"), seen
            )

    one_visit()
    # Built only now: its background threads draw from `random`, which Hypothesis
    # would take for a strategy doing so.
    container = container_for(migrated[0])
    assert seen[201] >= 40, seen  # the strategies reach the happy path too
    assert sum(n for status, n in seen.items() if status >= 400) >= 10, seen

    eventually(lambda: read_models(container) == truth(container), timeout=30)
    with httpx.Client(base_url=stack.base, timeout=10, headers=ADMIN) as http:
        assert answered(http.get("/statistics"), seen).status_code == 200
    for name in ("rosters", "statistics"):
        result = rebuild(stack, name)
        assert result.returncode == 0, result.stderr
    assert read_models(container) == truth(container)


Facts = tuple[dict[UUID, str], Counter[UUID], Counter[UUID], dict[UUID, str]]


def truth(container) -> Facts:
    """From the event store: titles, confirmed and cancelled per lesson, statuses."""
    titles: dict[UUID, str] = {}
    confirmed: Counter[UUID] = Counter()
    cancelled: Counter[UUID] = Counter()
    status: dict[UUID, str] = {}
    for envelope in published(container):
        match decode(envelope):
            case LessonScheduledV1(lesson_id=lesson, title=title):
                titles[lesson] = title
            case EnrollmentConfirmedV2(lesson_id=lesson, enrollment_id=enrollment):
                confirmed[lesson] += 1
                status[enrollment] = "confirmed"
            case EnrollmentCancelledV1(lesson_id=lesson, enrollment_id=enrollment):
                cancelled[lesson] += 1
                status[enrollment] = "cancelled"
    return titles, confirmed, cancelled, status


def read_models(container) -> Facts:
    with container.engine.connect() as conn:
        rows = list(conn.execute(sa.select(statistics.lessons)))
        status = {
            r.enrollment_id: r.status for r in conn.execute(sa.select(rosters.entries))
        }
    titles = {r.lesson_id: r.title for r in rows if r.title is not None}
    confirmed = Counter({r.lesson_id: r.confirmed for r in rows if r.confirmed})
    cancelled = Counter({r.lesson_id: r.cancelled for r in rows if r.cancelled})
    return titles, confirmed, cancelled, status


def rebuild(stack: Stack, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "projections", "rebuild", name],
        env=stack.env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
