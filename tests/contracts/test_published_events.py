"""The published language: stored examples, round trips, the mapping table."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

import attrs
import pytest
from hypothesis import given, reject
from hypothesis import strategies as st

from application.contracts.envelope import Envelope
from application.contracts.events import EVERY_VERSION, READERS
from application.contracts.mapping import UnknownSchemaError, decode, to_envelope
from application.contracts.purchase_events import PURCHASE_VERSIONS
from application.ids import event_id
from domain.enrollment import Enrollment
from domain.errors import DomainError
from domain.export import Export
from domain.lesson import Lesson

EXAMPLES = Path(__file__).parent / "examples"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*/v*.json"))
SUBJECT_OF = {"LessonScheduled": "lesson", "EnrollmentConfirmed": "enrollment",
              "EnrollmentCancelled": "enrollment",
              "ExportRequested": "export",
              **{cls.TYPE: "purchase" for cls in PURCHASE_VERSIONS}}  # fmt: skip


def load(path: Path) -> Envelope:
    subject = f"club.events.{SUBJECT_OF[path.parent.name]}.{path.parent.name}"
    return Envelope.from_json(subject, path.read_bytes())


CLASSES = {(cls.TYPE, cls.VERSION): cls for cls in EVERY_VERSION}
EXAMPLE_IDS = [f"{p.parent.name}/{p.name}" for p in EXAMPLE_FILES]


def test_every_published_version_has_a_stored_example_and_a_reader() -> None:
    """A new version without a stored example (or without a reader) fails here."""
    stored = {(p.parent.name, int(p.stem[1:])) for p in EXAMPLE_FILES}
    assert stored == set(CLASSES) == set(READERS)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_every_stored_example_has_exactly_its_versions_fields(path: Path) -> None:
    """Changing a published version's fields breaks its stored example."""
    cls = CLASSES[(path.parent.name, int(path.stem[1:]))]
    data = json.loads(path.read_text())["data"]
    assert cls.from_data(data).to_data() == data


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_every_stored_example_upcasts_to_the_current_version_keeping_its_meaning(
    path: Path,
) -> None:
    data = json.loads(path.read_text())["data"]
    current = decode(load(path)).to_data()
    assert {k: v for k, v in current.items() if k in data} == data  # nothing lost
    assert all(current[k] is None for k in set(current) - set(data))  # new: unknown


@functools.cache  # one strategy per class, not one per example
def built(cls) -> st.SearchStrategy:
    """A published version built from its fields' types; aware datetimes only: the
    contract is RFC 3339 in UTC."""
    attrs.resolve_types(cls)
    moment = st.datetimes(timezones=st.just(UTC))
    datetimes = {
        f.name: (st.none() | moment) if "None" in str(f.type) else moment
        for f in attrs.fields(cls)
        if "datetime" in str(f.type)
    }
    return st.builds(cls, **datetimes)


def assert_round_trips(event) -> None:
    assert type(event).from_data(json.loads(json.dumps(event.to_data()))) == event


@given(event=st.sampled_from(EVERY_VERSION).flatmap(built))
def test_any_version_round_trips(event) -> None:
    """Every version in one run; each version's own 100 examples are in
    tests/properties/test_published_language.py (make test, not make test-unit)."""
    assert_round_trips(event)


def test_an_unknown_version_is_refused_not_guessed() -> None:
    envelope = attrs.evolve(load(EXAMPLE_FILES[0]), schema_version=99)
    with pytest.raises(UnknownSchemaError):
        decode(envelope)


aware = st.datetimes(timezones=st.just(UTC))


@given(
    # Mostly what the domain accepts (no control characters, years it schedules);
    # the rest is rejected below, so a filter never starves.
    title=st.text(
        st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=50
    ).filter(str.strip),
    capacity=st.integers(1, 10_000),
    starts_at=st.datetimes(
        min_value=datetime(2000, 1, 2),  # noqa: DTZ001 - hypothesis takes naive bounds
        max_value=datetime(8998, 12, 30),  # noqa: DTZ001
        timezones=st.just(UTC),
    ),
    price=st.integers(0, 10**7),
)
def test_lesson_scheduled_envelope_round_trips(
    title, capacity, starts_at, price
) -> None:
    try:
        lesson = Lesson.schedule(
            lesson_id=uuid4(), title=title, capacity=capacity, starts_at=starts_at,
            price_cents=price,
        )  # fmt: skip
    except DomainError:
        reject()  # what the domain accepts must round-trip; the rest never gets in
    [scheduled] = lesson.collect_events()
    envelope = to_envelope(scheduled)
    assert envelope is not None
    again = Envelope.from_json(envelope.subject, envelope.to_json())
    assert again == envelope
    assert decode(again).to_data() == envelope.data


def test_envelope_carries_ids_only_and_a_stable_event_id() -> None:
    enrollment = Enrollment.confirm(
        enrollment_id=uuid4(), lesson_id=uuid4(), student_id="s-1", request_id="k"
    )
    [confirmed] = enrollment.collect_events()
    envelope = to_envelope(confirmed)
    assert envelope is not None
    assert envelope.subject == "club.events.enrollment.EnrollmentConfirmed"
    assert envelope.event_id == event_id(enrollment.id, 1)
    assert set(envelope.data) == {
        "enrollment_id", "lesson_id", "student_id", "lesson_starts_at",
    }  # fmt: skip
    assert envelope.schema_version == 2
    body = json.loads(envelope.to_json())
    assert set(body) == {"event_id", "type", "schema_version", "aggregate_id",
                         "aggregate_version", "occurred_at", "data"}  # fmt: skip
    assert body["occurred_at"].endswith("Z")
    assert datetime.fromisoformat(body["occurred_at"]).tzinfo is not None


def test_seat_bookkeeping_stays_internal() -> None:
    lesson = Lesson.schedule(
        lesson_id=uuid4(), title="Yoga", capacity=1,
        starts_at=datetime(2026, 12, 1, tzinfo=UTC), price_cents=0,
    )  # fmt: skip
    lesson.take_seat(enrollment_id=uuid4(), student_id="s-1")
    _, seat_taken = lesson.collect_events()
    assert to_envelope(seat_taken) is None


def test_stored_topics_are_pinned() -> None:
    """Stored events name their classes; a silent rename would orphan them."""
    topics = {
        f"{cls.__module__}:{cls.__qualname__}"
        for cls in (Lesson.Scheduled, Lesson.SeatTaken, Lesson.SeatReleased,
                    Enrollment.Confirmed, Enrollment.Cancelled,
                    Export.Requested, Export.Started, Export.Succeeded,
                    Export.Failed)
    }  # fmt: skip
    assert topics == {
        "domain.lesson:Lesson.Scheduled",
        "domain.lesson:Lesson.SeatTaken",
        "domain.lesson:Lesson.SeatReleased",
        "domain.enrollment:Enrollment.Confirmed",
        "domain.enrollment:Enrollment.Cancelled",
        "domain.export:Export.Requested",
        "domain.export:Export.Started",
        "domain.export:Export.Succeeded",
        "domain.export:Export.Failed",
    }


def test_export_requested_is_published_and_its_progress_stays_internal() -> None:
    """The request is the worker's job; started/succeeded/failed are read from the
    event store by GET /operations, never published."""
    requested_at = datetime(2026, 11, 30, 9, 15, tzinfo=UTC)
    export = Export.request(
        export_id=uuid4(), lesson_id=uuid4(), lesson_version=3,
        requested_at=requested_at,
    )  # fmt: skip
    export.start(now=requested_at)
    export.succeed(result_name="x.csv", rows=0, now=requested_at)
    requested, *progress = export.collect_events()
    envelope = to_envelope(requested)
    assert envelope is not None
    assert envelope.subject == "club.events.export.ExportRequested"
    assert envelope.event_id == event_id(export.id, 1)
    assert decode(envelope).to_data() == {
        "export_id": str(export.id),
        "lesson_id": str(export.lesson_id),
        "lesson_version": 3,
        "requested_at": "2026-11-30T09:15:00Z",
    }
    assert [to_envelope(e) for e in progress] == [None, None]
