"""Conflicts are about meaning: one event in v1 and in v2 is one event; another
meaning under the same event_id is still a conflict."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

import attrs
import pytest

from application.contracts.envelope import Envelope
from application.contracts.events import EnrollmentConfirmedV1
from application.contracts.mapping import decode, to_envelope
from application.contracts.meaning import SHARED_FIELDS, meaning_digest
from domain.enrollment import Enrollment
from domain.lesson import Lesson


def confirmed_v2() -> Envelope:
    enrollment = Enrollment.confirm(
        enrollment_id=uuid4(), lesson_id=uuid4(), student_id="s-1", request_id="k",
        lesson_starts_at=datetime(2026, 12, 1, 10, tzinfo=UTC),
    )  # fmt: skip
    [confirmed] = enrollment.collect_events()
    envelope = to_envelope(confirmed)
    assert envelope is not None
    assert envelope.schema_version == 2
    return envelope


def as_v1(envelope: Envelope, **changes: object) -> Envelope:
    """The copy the relay published before the v1 -> v2 switch."""
    data = {k: v for k, v in envelope.data.items() if k != "lesson_starts_at"}
    v1 = EnrollmentConfirmedV1.from_data(data | changes)
    return attrs.evolve(envelope, schema_version=1, data=v1.to_data())


def test_the_same_event_in_v1_and_v2_has_one_meaning() -> None:
    v2 = confirmed_v2()
    assert meaning_digest(as_v1(v2)) == meaning_digest(v2)


def test_the_meaning_ignores_how_the_body_was_written() -> None:
    v2 = confirmed_v2()
    again = Envelope.from_json(
        v2.subject, v2.to_json().replace(b"Z", b"+00:00").replace(b",", b", ")
    )
    assert again.to_json() != v2.to_json()
    assert meaning_digest(again) == meaning_digest(v2)


@pytest.mark.parametrize(
    "changes", [{"student_id": "someone-else"}, {"lesson_id": str(uuid4())}]
)
def test_another_meaning_under_the_same_event_id_differs(changes) -> None:
    v2 = confirmed_v2()
    assert meaning_digest(as_v1(v2, **changes)) != meaning_digest(v2)


def test_other_ids_differ() -> None:
    v2 = confirmed_v2()
    for changed in (
        attrs.evolve(v2, event_id=uuid4()),
        attrs.evolve(v2, aggregate_version=2),
        attrs.evolve(v2, occurred_at=datetime(2020, 1, 1, tzinfo=UTC)),
    ):
        assert meaning_digest(changed) != meaning_digest(v2)


def _reference_digest(envelope: Envelope) -> bytes:
    """meaning_digest as first written: json.dumps, then sha256."""
    current = decode(envelope).to_data()
    shared = SHARED_FIELDS[envelope.type]
    canonical = {
        "event_id": str(envelope.event_id),
        "type": envelope.type,
        "aggregate_id": str(envelope.aggregate_id),
        "aggregate_version": envelope.aggregate_version,
        "occurred_at": envelope.occurred_at.astimezone(UTC).isoformat(),
        "data": {k: v for k, v in current.items() if k in shared},
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).digest()


EXAMPLES = sorted((Path(__file__).parent / "examples").glob("*/v*.json"))


@pytest.mark.parametrize(
    "path", EXAMPLES, ids=[f"{p.parent.name}/{p.name}" for p in EXAMPLES]
)
def test_the_digest_is_sha256_of_what_json_dumps_writes(path: Path) -> None:
    """Digests already kept in inboxes must not move when the encoder does."""
    envelope = Envelope.from_json(
        f"club.events.x.{path.parent.name}", path.read_bytes()
    )
    assert meaning_digest(envelope) == _reference_digest(envelope)


def test_a_non_ascii_title_digests_as_json_dumps_wrote_it() -> None:
    lesson = Lesson.schedule(
        lesson_id=uuid4(), title="Café ✓", capacity=3,
        starts_at=datetime(2026, 12, 1, 10, tzinfo=UTC), price_cents=0,
    )  # fmt: skip
    [scheduled] = lesson.collect_events()
    envelope = to_envelope(scheduled)
    assert envelope is not None
    assert meaning_digest(envelope) == _reference_digest(envelope)
