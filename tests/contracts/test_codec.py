"""The msgspec codec (application/contracts/codec.py): the relay's one-pass bytes are
json.dumps's for every version and any text, and the readers refuse at least what
the hand-written ones refused (bench/results/codecs.json's hostile table)."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from uuid import UUID, uuid4

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from application.contracts.envelope import Envelope, MalformedEnvelopeError
from application.contracts.events import (
    EVERY_VERSION,
    EnrollmentConfirmedV2,
    LessonScheduledV1,
    PublishedEvent,
)
from application.contracts.mapping import decode
from tests.contracts.test_envelope_bytes import stdlib

LESSON = {
    "lesson_id": str(UUID(int=1)),
    "title": "Yoga",
    "capacity": 12,
    "starts_at": "2026-12-01T10:00:00Z",
    "price_cents": 0,
}


def mapped(event: PublishedEvent, occurred_at: datetime | None = None) -> Envelope:
    """An envelope as the relay builds it: the published version, no data dict."""
    return Envelope(
        event_id=uuid4(),
        type=event.TYPE,
        schema_version=event.VERSION,
        aggregate="any",
        aggregate_id=uuid4(),
        aggregate_version=7,
        occurred_at=occurred_at or datetime(2026, 11, 30, 10, 0, 0, 120, tzinfo=UTC),
        published=event,
    )


def json_dumps(envelope: Envelope) -> bytes:
    """What the relay wrote before msgspec: json.dumps of the hand-written dict."""
    published: Any = envelope.published  # an attrs class, which mypy cannot see
    data = {
        name: (
            str(value)
            if isinstance(value, UUID)
            else value.isoformat().replace("+00:00", "Z")
            if isinstance(value, datetime)
            else value
        )
        for name, value in attrs.asdict(published).items()
    }
    return stdlib(attrs.evolve(envelope, data=data, published=None))


offsets = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
moments = st.datetimes(timezones=st.just(UTC) | offsets)
any_text = st.text(st.characters(codec=None, exclude_categories=()))


@functools.cache  # one strategy per class, not one per example
def any_instance(cls: type[Any]) -> st.SearchStrategy[Any]:
    """Any instance of a published version: any text, ints past 64 bits, times in
    any offset."""
    attrs.resolve_types(cls)
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for field in attrs.fields(cls):
        kind = str(field.type)
        if "datetime" in kind.lower():
            fields[field.name] = (st.none() | moments) if "None" in kind else moments
        elif kind.endswith("str"):
            fields[field.name] = any_text
        elif kind.endswith("int"):
            fields[field.name] = st.integers(-(2**70), 2**70)
    return st.builds(cls, **fields)


def assert_one_pass_bytes(event: PublishedEvent, occurred_at: datetime) -> None:
    envelope = mapped(event, occurred_at)
    assert envelope.to_json() == json_dumps(envelope)


@given(event=st.sampled_from(EVERY_VERSION).flatmap(any_instance), occurred_at=moments)
def test_one_pass_writes_json_dumps_bytes_for_any_version(
    event: PublishedEvent, occurred_at: datetime
) -> None:
    """Every version in one run; each version's own 150 examples are in
    tests/properties/test_published_language.py (make test, not make test-unit)."""
    assert_one_pass_bytes(event, occurred_at)


@pytest.mark.parametrize(
    "title",
    ["Café", "\x7f", "\x00\x0b\x1f\n\t", "\ud800 lone", "\u2028", "emoji 🧘", '"\\/'],
)
def test_awkward_titles_keep_the_standard_librarys_bytes(title: str) -> None:
    event = LessonScheduledV1.from_data(LESSON | {"title": title})
    envelope = mapped(event)
    assert envelope.to_json() == json_dumps(envelope)


def test_an_occurred_at_with_seconds_in_its_offset_is_written_as_before() -> None:
    odd = timezone(timedelta(hours=1, seconds=30))
    envelope = mapped(
        LessonScheduledV1.from_data(LESSON), datetime(2026, 1, 1, tzinfo=odd)
    )
    assert envelope.to_json() == json_dumps(envelope)


def test_a_mapped_envelope_equals_the_same_envelope_read_back() -> None:
    envelope = mapped(LessonScheduledV1.from_data(LESSON))
    again = Envelope.from_json("club.events.any.LessonScheduled", envelope.to_json())
    assert again == envelope
    assert again.data == envelope.data == LESSON


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 12, 1, 10),  # noqa: DTZ001 - naive on purpose
        datetime(2026, 12, 1, 10, tzinfo=timezone(timedelta(hours=1, seconds=30))),
    ],
    ids=["naive", "offset with seconds"],
)
def test_a_time_rfc3339_cannot_write_is_refused_when_mapped(moment: datetime) -> None:
    """The relay dead-letters such an event instead of publishing a wrong time."""
    with pytest.raises(ValueError, match="starts_at"):
        LessonScheduledV1(
            lesson_id=uuid4(), title="Yoga", capacity=1, starts_at=moment, price_cents=0
        )
    with pytest.raises(ValueError, match="lesson_starts_at"):
        EnrollmentConfirmedV2(
            enrollment_id=uuid4(),
            lesson_id=uuid4(),
            student_id="s",
            lesson_starts_at=moment,
        )


REFUSED = {
    # the hand-written readers refused these too
    "missing field": {"capacity": attrs.NOTHING},
    "lesson_id not a uuid": {"lesson_id": "x"},
    # the hand-written readers accepted these (int("12"), str(7), a naive time ...)
    "capacity as string": {"capacity": "12"},
    "capacity as float": {"capacity": 12.7},
    "capacity as whole float": {"capacity": 12.0},
    "capacity as bool": {"capacity": True},
    "title as number": {"title": 7},
    "null title": {"title": None},
    "naive starts_at": {"starts_at": "2026-12-01T10:00:00"},
    "date-only starts_at": {"starts_at": "2026-12-01"},
    "starts_at without seconds": {"starts_at": "2026-12-01T10:00Z"},
    "starts_at with a comma": {"starts_at": "2026-12-01T10:00:00,5Z"},
    # msgspec alone would accept these two, fromisoformat did not (or read it otherwise)
    "lower-case t and z": {"starts_at": "2026-12-01t10:00:00z"},
    "seven fraction digits": {"starts_at": "2026-12-01T10:00:00.1234567Z"},
    "lesson_id in braces": {"lesson_id": "{" + str(UUID(int=1)) + "}"},
}


@pytest.mark.parametrize("change", REFUSED.values(), ids=REFUSED.keys())
def test_the_reader_refuses_what_it_must(change: dict[str, Any]) -> None:
    data = {k: v for k, v in (LESSON | change).items() if v is not attrs.NOTHING}
    # msgspec's ValidationError is a ValueError; either names the field
    with pytest.raises(ValueError, match=r"capacity|title|starts_at|lesson_id"):
        LessonScheduledV1.from_data(data)


def test_the_reader_still_accepts_what_the_contract_allows() -> None:
    """An extra field (a later version's addition) and any RFC 3339 offset."""
    data = LESSON | {"extra": 1, "starts_at": "2026-12-01T10:00:00.5-03:00"}
    event = LessonScheduledV1.from_data(data)
    assert event.starts_at == datetime(2026, 12, 1, 13, 0, 0, 500000, tzinfo=UTC)


BODY = {
    "event_id": str(UUID(int=2)),
    "type": "LessonScheduled",
    "schema_version": 1,
    "aggregate_id": str(UUID(int=1)),
    "aggregate_version": 1,
    "occurred_at": "2026-11-30T10:00:00Z",
    "data": LESSON,
}
BAD_BODIES = {
    "version as bool": {"schema_version": True},
    "version as string": {"schema_version": "1"},
    "event_id as number": {"event_id": 5},
    "naive occurred_at": {"occurred_at": "2026-11-30T10:00:00"},
    "lower-case occurred_at": {"occurred_at": "2026-11-30t10:00:00z"},
    "data as list": {"data": []},
    "no data": {"data": attrs.NOTHING},
}


@pytest.mark.parametrize("change", BAD_BODIES.values(), ids=BAD_BODIES.keys())
def test_a_body_of_the_wrong_shape_is_malformed(change: dict[str, Any]) -> None:
    body = {k: v for k, v in (BODY | change).items() if v is not attrs.NOTHING}
    with pytest.raises(MalformedEnvelopeError):
        Envelope.from_json(
            "club.events.lesson.LessonScheduled", json.dumps(body).encode()
        )


@pytest.mark.parametrize(
    "text", [b"NaN", b'{"a": NaN}', b"[" * 5000, b"\xff", b'{"data": {"t": "\\ud800"}}']
)
def test_json_the_standard_library_read_loosely_is_malformed(text: bytes) -> None:
    with pytest.raises(MalformedEnvelopeError):
        Envelope.from_json("club.events.lesson.LessonScheduled", text)


def test_decode_reads_a_mapped_envelope_without_its_json() -> None:
    event = LessonScheduledV1.from_data(LESSON)
    assert decode(mapped(event)) == event
