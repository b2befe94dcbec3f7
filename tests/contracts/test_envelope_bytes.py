"""Envelope.to_json writes the bytes json.dumps always wrote, whatever the data.

The fast encoder (orjson where it agrees) must never move a published body: inbox
rows written before the meaning digests hold its sha256, and a republish after an
upgrade would look like a conflict there.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from enum import Enum, IntEnum
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from application.contracts.envelope import Envelope, canonical_json
from application.contracts.mapping import _event_id
from application.ids import event_id

EXAMPLES = sorted((Path(__file__).parent / "examples").glob("*/v*.json"))


def envelope_with(
    data: dict[str, Any], *, occurred_at: datetime | None = None
) -> Envelope:
    return Envelope(
        event_id=UUID("5b0c9a49-7a43-4c8c-9f59-0f3a0f7e8d11"),
        type="LessonScheduled",
        schema_version=1,
        aggregate="lesson",
        aggregate_id=UUID("0d6f3e3c-1b7e-4f0e-8a8d-3f1f6c1c2b9a"),
        aggregate_version=1,
        occurred_at=occurred_at or datetime(2026, 11, 30, 10, 0, tzinfo=UTC),
        data=data,
    )


def stdlib(envelope: Envelope) -> bytes:
    body = {
        "event_id": str(envelope.event_id),
        "type": envelope.type,
        "schema_version": envelope.schema_version,
        "aggregate_id": str(envelope.aggregate_id),
        "aggregate_version": envelope.aggregate_version,
        "occurred_at": envelope.occurred_at.isoformat().replace("+00:00", "Z"),
        "data": envelope.data,
    }
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


@pytest.mark.parametrize(
    "path", EXAMPLES, ids=[f"{p.parent.name}/{p.name}" for p in EXAMPLES]
)
def test_every_stored_example_encodes_to_the_bytes_json_dumps_wrote(path: Path) -> None:
    subject = f"club.events.any.{path.parent.name}"
    envelope = Envelope.from_json(subject, path.read_bytes())
    assert envelope.to_json() == stdlib(envelope)


class Colour(Enum):
    RED = "red"


class Level(IntEnum):
    HIGH = 3


@pytest.mark.parametrize(
    "data",
    [
        {"title": "Café Ünïcode ✓"},  # json.dumps escapes, orjson would not
        {"title": "\ud800 lone surrogate"},  # orjson refuses it
        {"title": "\x00\x1f\x7f control"},
        {"capacity": 2**70},  # beyond 64 bits: orjson refuses it
        {"capacity": 2**64 - 1, "low": -(2**63)},
        {"price": 1e-05, "nan": float("nan"), "inf": float("inf")},  # floats differ
        {"nested": {"b": [1, "ü", None], "a": True}},
        {3: "an int key", 1: "a"},  # json.dumps writes them as "1", "3"
        {"kind": Level.HIGH, "colour": Colour.RED.value},
        {"tz": "2026-01-01T00:00:00+05:30", "empty": "", "none": None},
    ],
)
def test_awkward_data_keeps_the_standard_librarys_bytes(data: dict[Any, Any]) -> None:
    envelope = envelope_with(data)
    assert envelope.to_json() == stdlib(envelope)


def test_what_json_dumps_refuses_is_still_refused() -> None:
    """orjson would quietly write a UUID or a datetime; the contract's data never
    holds one, so writing it would hide a mapping bug."""
    for bad in (uuid4(), datetime(2026, 1, 1, tzinfo=UTC), Colour.RED):
        with pytest.raises(TypeError):
            envelope_with({"value": bad}).to_json()


def test_a_non_utc_offset_is_written_as_before() -> None:
    moment = datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=-3)))
    envelope = envelope_with({"a": 1}, occurred_at=moment)
    assert envelope.to_json() == stdlib(envelope)


plain = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(),
)


plain_data = st.dictionaries(st.text(), plain, max_size=6)


def assert_encodes_as_json_dumps_does(data: dict[str, Any]) -> None:
    envelope = envelope_with(data)
    assert envelope.to_json() == stdlib(envelope)


@given(plain_data)
def test_any_plain_data_encodes_as_json_dumps_does(data: dict[str, Any]) -> None:
    """Hypothesis's 100 examples; 400 in tests/properties/test_published_language.py
    (make test, not make test-unit)."""
    assert_encodes_as_json_dumps_does(data)


def test_canonical_json_is_the_reference_on_the_body_itself() -> None:
    body = {"data": {"é": 1, "z": "x"}, "a": 1}
    assert (
        canonical_json(body)
        == json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    )


def test_the_mappings_event_id_is_the_one_application_ids_derives() -> None:
    """The mapping derives event ids its own (faster) way: never another id."""
    for version in (0, 1, 2, 10**6):
        aggregate_id = uuid4()
        assert _event_id(aggregate_id, version) == event_id(aggregate_id, version)
