"""The relay's fast reader of stored states gives what the library's mapper gives.

`published_envelope` reads a published event's stored JSON with msgspec
(`application/contracts/stored_state.py`) and falls back to the library's mapper for
anything it is not sure of. Whatever the state — written by the library from any
values, or hostile — the outcome must be the library path's: the same envelope, the
same bytes on the wire, or the same error.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, get_type_hints
from uuid import UUID, uuid4

import attrs
import pytest
from eventsourcing.persistence import Mapper, Notification
from eventsourcing.utils import get_topic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from application.club import ClubApplication
from application.contracts import mapping
from application.contracts.envelope import Envelope
from application.contracts.mapping import (
    PUBLISHED,
    decode,
    published_envelope,
    published_envelope_via_library,
)
from application.contracts.meaning import meaning_digest
from application.ids import event_id
from domain.enrollment import Enrollment
from domain.export import Export
from domain.lesson import Lesson

PUBLISHED_CLASSES = sorted(PUBLISHED, key=get_topic)


@pytest.fixture(scope="module")
def mapper() -> Mapper[UUID]:
    app = ClubApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    return app.mapper


def outcome(read: Any, mapper: Mapper[UUID], n: Notification) -> tuple[Any, ...]:
    """What a reader makes of a notification: the envelope as published, or the
    error (type and text) it raised."""
    try:
        envelope = read(mapper, n)
        body = None if envelope is None else envelope.to_json()
    except Exception as e:
        return ("error", type(e), str(e))
    if envelope is None:
        return ("internal",)
    return (
        "published",
        envelope,
        body,
        type(envelope.published),
        envelope.published,
        envelope.occurred_at.utcoffset(),
    )


def assert_same(mapper: Mapper[UUID], n: Notification) -> tuple[Any, ...]:
    fast = outcome(published_envelope, mapper, n)
    library = outcome(published_envelope_via_library, mapper, n)
    assert fast == library
    for got in (fast, library):
        if got[0] == "published":
            assert_decodes_as_read(got[1])
    return fast


def _attempt(work: Any) -> tuple[Any, ...]:
    try:
        value = work()
    except Exception as e:
        return ("error", type(e), str(e))
    return ("value", type(value), value, value.to_data())


def assert_decodes_as_read(envelope: Envelope) -> None:
    """`decode` of a mapped envelope (which may skip reading its data back) gives
    what a consumer reading the same data gets: the event, its data, its meaning
    digest (the rebuild's inbox rows), or the error."""
    as_read = attrs.evolve(envelope, data=envelope.data, published=None)
    assert _attempt(lambda: decode(envelope)) == _attempt(lambda: decode(as_read))
    digest = _attempt(lambda: _Digest(meaning_digest(envelope)))
    assert digest == _attempt(lambda: _Digest(meaning_digest(as_read)))


@attrs.frozen
class _Digest:
    value: bytes

    def to_data(self) -> bytes:
        return self.value


def notification(
    event: Any, mapper: Mapper[UUID], state: bytes | None = None
) -> Notification:
    stored = mapper.to_stored_event(event)
    return Notification(
        id=1,
        originator_id=stored.originator_id,
        originator_version=stored.originator_version,
        topic=stored.topic,
        state=stored.state if state is None else state,
    )


def test_the_log_of_real_aggregates_maps_the_same(mapper: Mapper[UUID]) -> None:
    starts = datetime(2027, 1, 1, 10, tzinfo=timezone(timedelta(hours=-5)))
    events: list[Any] = []
    for title in ("Morning yoga", "Café yoga", "瑜伽 🧘", 'quote " and \\ back'):
        lesson = Lesson.schedule(
            lesson_id=uuid4(), title=title, capacity=3, starts_at=starts, price_cents=0
        )
        enrollment = Enrollment.confirm(
            enrollment_id=uuid4(), lesson_id=lesson.id, student_id=f"s-{title}",
            request_id="r", lesson_starts_at=lesson.starts_at,
        )  # fmt: skip
        lesson.take_seat(enrollment_id=enrollment.id, student_id=f"s-{title}")
        enrollment.cancel(reason="clash")
        export = Export(
            id=uuid4(), lesson_id=lesson.id, lesson_version=lesson.version,
            requested_at=datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=UTC),
        )  # fmt: skip
        events += [*lesson.collect_events(), *enrollment.collect_events()]
        events += export.collect_events()
    notifications = [notification(e, mapper) for e in events]
    published = [assert_same(mapper, n) for n in notifications]
    read_fast = [mapping._STORED.domain_event(n) for n in notifications]
    assert sum(e is not None for e in read_fast) == 16  # none left to the library
    kinds = {o[3].__name__ for o in published if o[0] == "published"}
    assert kinds == {"LessonScheduledV1", "EnrollmentConfirmedV2",
                     "EnrollmentCancelledV1", "ExportRequestedV1"}  # fmt: skip
    assert sum(o[0] == "internal" for o in published) == 4  # the seats taken


def test_every_published_class_is_read_fast(mapper: Mapper[UUID]) -> None:
    """No published class falls back for want of a reader: a new one with a field
    type the reader does not know fails here, not silently slow."""
    for cls in PUBLISHED_CLASSES:
        assert get_topic(cls) in mapping._STORED


def _aware(draw: st.DrawFn) -> datetime:
    offset = draw(st.integers(-23 * 60, 23 * 60).map(lambda m: timedelta(minutes=m)))
    naive = draw(
        st.datetimes(
            min_value=datetime(1, 1, 2),  # noqa: DTZ001 - an offset is drawn next
            max_value=datetime(9999, 12, 30),  # noqa: DTZ001
        )
    )
    return naive.replace(tzinfo=timezone(offset))


@st.composite
def any_time(draw: st.DrawFn) -> datetime:
    """Mostly aware times, some with seconds in the offset or none at all (both
    refused by the contract: the error must be the same too)."""
    moment = _aware(draw)
    odd = draw(st.integers(0, 9))
    if odd == 0:
        return moment.replace(tzinfo=None)
    if odd == 1:
        return moment.replace(
            tzinfo=timezone(timedelta(seconds=draw(st.integers(1, 59))))
        )
    return moment


def value_for(hint: Any) -> st.SearchStrategy[Any]:
    if hint is str:
        return st.text()
    if hint is int:
        return st.integers(-(2**70), 2**70)
    if hint is UUID:
        return st.uuids()
    if hint is datetime:
        return any_time()
    return st.none() | any_time()  # datetime | None


@st.composite
def domain_events(draw: st.DrawFn) -> Any:
    """A published domain event of any class, its fields drawn from their types."""
    cls = draw(st.sampled_from(PUBLISHED_CLASSES))
    state: dict[str, Any] = {}
    for name, hint in get_type_hints(cls).items():
        if name in ("originator_id", "originator_version", "originator_id_type"):
            continue
        state[name] = draw(value_for(hint))
    state["originator_id"] = draw(st.uuids())
    state["originator_version"] = draw(st.integers(1, 2**31))
    event = object.__new__(cls)
    object.__setattr__(event, "__dict__", state)
    return event


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(event=domain_events())
def test_any_stored_event_maps_the_same(mapper: Mapper[UUID], event: Any) -> None:
    """Hypothesis's 100 examples; 300 in tests/properties/test_published_language.py
    (make test, not make test-unit)."""
    assert_same(mapper, notification(event, mapper))


HOSTILE: list[Any] = [
    1.0,
    2.5,
    True,
    False,
    None,
    "12",
    12,
    2**64,
    -(2**63) - 1,
    [],
    {},
    1e300,
    {"_type_": "uuid_hex", "_data_": "0" * 32},
    {"_type_": "uuid_hex", "_data_": "{" + "1" * 32 + "}"},
    {"_type_": "uuid_hex", "_data_": "urn:uuid:" + str(UUID(int=7))},
    {"_type_": "uuid_hex", "_data_": "not hex"},
    {"_type_": "datetime_iso", "_data_": "2027-01-01"},
    {"_type_": "datetime_iso", "_data_": "2027-01-01T10:00:00"},
    {"_type_": "datetime_iso", "_data_": "2027-01-01T10:00:00.1234567+00:00"},
    {"_type_": "datetime_iso", "_data_": "2027-01-01 10:00:00Z"},
    {"_type_": "datetime_iso", "_data_": "2027-01-01T10:00:00+05:30:15"},
    {"_type_": "decimal_str", "_data_": "1.5"},
    {"_type_": "decimal_str", "_data_": "1" * 32},
    {"_type_": "no_such_type", "_data_": "1" * 32},
    {"_type_": "datetime_iso", "_data_": "2027-01-01T10:00:00+00:00", "x": 1},
    {"_type_": "uuid_hex", "_data_": "1" * 32, "x": 1},
    {"_data_": "2027-01-01T10:00:00+00:00"},
    {"_type_": "datetime_iso"},
]


def _one_event_per_class() -> list[Any]:
    """A plain event of every published class, its fields of their own types."""
    values = {str: "s", int: 7, UUID: UUID(int=42),
              datetime: datetime(2027, 1, 1, 10, tzinfo=UTC)}  # fmt: skip
    events = []
    for cls in PUBLISHED_CLASSES:
        state: dict[str, Any] = {"originator_id": uuid4(), "originator_version": 3}
        for name, hint in get_type_hints(cls).items():
            if name not in state and name != "originator_id_type":
                state[name] = values.get(hint, values[datetime])
        event = object.__new__(cls)
        object.__setattr__(event, "__dict__", state)
        events.append(event)
    return events


def test_every_field_swapped_dropped_or_added_maps_the_same(
    mapper: Mapper[UUID],
) -> None:
    """Every stored field of every published class, in turn: swapped for a value
    of another JSON type, dropped; an extra key; the class version moved. The fast
    reader must step aside (or agree), never answer otherwise."""
    cases = 0
    for event in _one_event_per_class():
        written = json.loads(mapper.to_stored_event(event).state)
        variants: list[dict[str, Any]] = []
        for key in [*written, "class_version"]:
            variants += [written | {key: value} for value in HOSTILE]
            variants.append({k: v for k, v in written.items() if k != key})
        variants += [written | {"unexpected": value} for value in HOSTILE]
        for state in variants:
            for ascii_only in (True, False):
                stored = json.dumps(state, ensure_ascii=ascii_only).encode()
                assert_same(mapper, notification(event, mapper, stored))
                cases += 1
    assert cases > 1000


@pytest.mark.parametrize(
    "state",
    [b"", b"not json", b"[]", b"\xff\xfe", b'{"title": "\\ud800"}', b"{}", b"null"],
)
def test_bytes_that_are_no_state_fail_the_same(
    mapper: Mapper[UUID], state: bytes
) -> None:
    lesson = Lesson.schedule(
        lesson_id=uuid4(), title="t", capacity=1, price_cents=0,
        starts_at=datetime(2027, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    (scheduled,) = lesson.collect_events()
    got = assert_same(mapper, notification(scheduled, mapper, state))
    assert got[0] == "error"


def test_a_v1_confirmation_is_upcast_by_the_library(mapper: Mapper[UUID]) -> None:
    """A v1 state (no class_version, no lesson_starts_at) is not the fast reader's:
    the library upcasts it, and the result is the same v2 with no start."""
    enrollment = Enrollment.confirm(
        enrollment_id=uuid4(), lesson_id=uuid4(), student_id="s", request_id="r",
        lesson_starts_at=datetime(2027, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    (confirmed,) = enrollment.collect_events()
    state = json.loads(mapper.to_stored_event(confirmed).state)
    del state["class_version"], state["lesson_starts_at"]
    n = notification(confirmed, mapper, json.dumps(state).encode())
    assert mapping._STORED.domain_event(n) is None
    got = assert_same(mapper, n)
    assert got[4].lesson_starts_at is None


@given(aggregate_id=st.uuids(), version=st.integers(0, 2**63))
def test_event_ids_are_uuid5(aggregate_id: UUID, version: int) -> None:
    fast = mapping._event_id(aggregate_id, version)
    assert fast == event_id(aggregate_id, version)
    assert (fast.version, fast.variant, str(fast)) == (
        5,
        "specified in RFC 4122",
        str(event_id(aggregate_id, version)),
    )
