"""The one table from internal domain events to published envelopes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from types import UnionType
from typing import Any, Union, cast, get_args, get_origin, get_type_hints
from uuid import UUID, SafeUUID

from eventsourcing.persistence import Mapper, Notification
from eventsourcing.utils import get_topic

from application.contracts.codec import PublishedContract
from application.contracts.envelope import Envelope, MalformedEnvelopeError
from application.contracts.events import (
    EVERY_VERSION,
    READERS,
    CurrentEvent,
    EnrollmentCancelledV1,
    EnrollmentConfirmedV2,
    ExportRequestedV1,
    LessonScheduledV1,
    PublishedEvent,
)
from application.contracts.purchase_mapping import PURCHASE_PUBLISHED
from application.contracts.stored_state import StoredStateReader
from application.ids import CLUB_NS
from domain.enrollment import Enrollment
from domain.export import Export
from domain.lesson import Lesson


class UnknownSchemaError(ValueError):
    """A consumer met an event type or schema version it cannot read."""


def _lesson_scheduled(e: Lesson.Scheduled) -> LessonScheduledV1:
    return LessonScheduledV1(
        lesson_id=e.originator_id,
        title=e.title,
        capacity=e.capacity,
        starts_at=e.starts_at,
        price_cents=e.price_cents,
    )


def _enrollment_confirmed(e: Enrollment.Confirmed) -> EnrollmentConfirmedV2:
    return EnrollmentConfirmedV2(
        enrollment_id=e.originator_id,
        lesson_id=e.lesson_id,
        student_id=e.student_id,
        lesson_starts_at=e.lesson_starts_at,
    )


def _enrollment_cancelled(e: Enrollment.Cancelled) -> EnrollmentCancelledV1:
    return EnrollmentCancelledV1(
        enrollment_id=e.originator_id, lesson_id=e.lesson_id, student_id=e.student_id
    )


def _export_requested(e: Export.Requested) -> ExportRequestedV1:
    return ExportRequestedV1(
        export_id=e.originator_id,
        lesson_id=e.lesson_id,
        lesson_version=e.lesson_version,
        requested_at=e.requested_at,
    )


# Internal event class -> (subject aggregate token, published encoder).
# Events missing here (a lesson's seat bookkeeping, the saga's retries and checks)
# stay internal.
PUBLISHED: dict[type[Any], tuple[str, Callable[[Any], PublishedEvent]]] = {
    Lesson.Scheduled: ("lesson", _lesson_scheduled),
    Enrollment.Confirmed: ("enrollment", _enrollment_confirmed),
    Enrollment.Cancelled: ("enrollment", _enrollment_cancelled),
    Export.Requested: ("export", _export_requested),
    **{event: ("purchase", encode) for event, encode in PURCHASE_PUBLISHED.items()},
}

# The stored topics the relay publishes: the rest of the log stays internal.
PUBLISHED_TOPICS = frozenset(get_topic(cls) for cls in PUBLISHED)
# Reads a published event's stored state in one msgspec pass (~3x the library's
# transcoder); whatever it is not sure of goes the library's way.
_STORED = StoredStateReader({get_topic(cls): cls for cls in PUBLISHED})


def to_envelope(domain_event: Any) -> Envelope | None:
    """The envelope to publish for an internal event, or None if it stays internal."""
    entry = PUBLISHED.get(type(domain_event))
    if entry is None:
        return None
    aggregate, encode = entry
    published = encode(domain_event)
    return Envelope(
        event_id=_event_id(domain_event.originator_id, domain_event.originator_version),
        type=published.TYPE,
        schema_version=published.VERSION,
        aggregate=aggregate,
        aggregate_id=domain_event.originator_id,
        aggregate_version=domain_event.originator_version,
        occurred_at=domain_event.timestamp,
        published=published,
    )


_NAMESPACE = CLUB_NS.bytes
# uuid5's version and variant bits, set the way uuid.UUID(version=5) sets them.
_CLEAR_VERSION = ~((0xC000 << 48) | (0xF000 << 64))
_VERSION_5 = (0x8000 << 48) | (5 << 76)


def _event_id(aggregate_id: UUID, aggregate_version: int) -> UUID:
    """application.ids.event_id (uuid5) without uuid5's import, namespace encoding
    and UUID's argument checks on every call: the relay and the rebuild derive one
    per event (tests/unit/test_stored_state.py compares it with event_id)."""
    name = f"{aggregate_id}:{aggregate_version}".encode()
    digest = hashlib.sha1(_NAMESPACE + name).digest()  # noqa: S324 - uuid5 is sha1 by definition
    event_id = object.__new__(UUID)
    bits = (int.from_bytes(digest[:16]) & _CLEAR_VERSION) | _VERSION_5
    object.__setattr__(event_id, "int", bits)
    object.__setattr__(event_id, "is_safe", SafeUUID.unknown)
    return event_id


def published_envelopes(
    mapper: Mapper[UUID], notifications: Sequence[Notification]
) -> list[Envelope]:
    """The envelopes a stretch of the notification log publishes, in log order."""
    return [e for n in notifications if (e := published_envelope(mapper, n))]


def published_envelope(
    mapper: Mapper[UUID], notification: Notification
) -> Envelope | None:
    """One stored event as published, or None if it stays internal."""
    if notification.topic not in PUBLISHED_TOPICS:
        return None  # not worth decoding: half the log is seat bookkeeping
    domain_event = _STORED.domain_event(notification)
    if domain_event is None:  # an older class version, an odd state: the library
        domain_event = mapper.to_domain_event(notification)
    return to_envelope(domain_event)


def published_envelope_via_library(
    mapper: Mapper[UUID], notification: Notification
) -> Envelope | None:
    """`published_envelope` through the library's mapper alone: the reference the
    fast reader is checked against (tests/unit/test_stored_state.py)."""
    if notification.topic not in PUBLISHED_TOPICS:
        return None
    return to_envelope(mapper.to_domain_event(notification))


def decode(envelope: Envelope) -> CurrentEvent:
    """The event inside an envelope, upcast to its current version.

    Unknown types and versions are refused, never guessed; data a reader cannot
    read is malformed, whatever the reader raised (a number where an id belongs,
    `1e999999` where an integer belongs), so no body can crash a consumer.
    """
    published = envelope.published
    if published is not None and _reads_back_as_itself(envelope, published):
        return cast("CurrentEvent", published)  # what reading its data back gives
    if (event := envelope.remembered()) is not None:
        return cast("CurrentEvent", event)
    read = READERS.get((envelope.type, envelope.schema_version))
    if read is None:
        msg = f"no reader for {envelope.type} v{envelope.schema_version}"
        raise UnknownSchemaError(msg)
    try:
        event = read(envelope.data)
    except Exception as e:
        msg = (
            f"{envelope.type} v{envelope.schema_version} data is malformed: "
            f"{type(e).__name__}: {e}"
        )
        raise MalformedEnvelopeError(msg) from e
    envelope.remember(event)
    return event


# Each current version's fields, and the exact types its reader accepts in them.
_CURRENT: dict[tuple[str, int], type[Any]] = {
    (cls.TYPE, cls.VERSION): cls
    for cls in EVERY_VERSION
    if READERS.get((cls.TYPE, cls.VERSION)) == cls.from_data  # read as itself
}
_PLAIN_KINDS = {str: (str,), int: (int,), UUID: (UUID,), datetime: (datetime,)}


def _field_kinds(cls: type[Any]) -> tuple[tuple[str, tuple[type, ...]], ...] | None:
    kinds = []
    for name, hint in get_type_hints(cls, include_extras=False).items():
        if name in ("TYPE", "VERSION"):
            continue
        options = get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,)
        allowed: tuple[type, ...] = ()
        for option in options:
            if option is type(None):
                allowed += (type(None),)
            elif option in _PLAIN_KINDS:
                allowed += _PLAIN_KINDS[option]
            else:
                return None  # a kind not checked here: its reader decides
        kinds.append((name, allowed))
    return tuple(kinds)


_CURRENT_KINDS = {key: _field_kinds(cls) for key, cls in _CURRENT.items()}


def _reads_back_as_itself(envelope: Envelope, published: PublishedContract) -> bool:
    """The relay's and the rebuild's envelopes hold the current version they were
    mapped to; reading its own data back (msgspec's to_builtins, then its reader)
    gives an equal event whenever every field holds exactly a str, int, UUID,
    datetime (aware, whole-minute offset: its validator saw to that) or an allowed
    None — checked here for ~1 µs instead of ~6 µs for the round trip. Anything
    else goes through the reader as before, and fails there as before."""
    if envelope._data is not None:  # data as read wins over the published event
        return False
    key = (envelope.type, envelope.schema_version)
    if _CURRENT.get(key) is not type(published):
        return False
    kinds = _CURRENT_KINDS[key]
    if kinds is None:
        return False
    return all(type(getattr(published, name)) in allowed for name, allowed in kinds)


def unreadable_published_versions(
    published: dict[type[Any], tuple[str, Callable[[Any], PublishedEvent]]],
    readers: Collection[tuple[str, int]],
) -> list[str]:
    """Internal events the relay would publish in a version no reader knows.

    The rollout order is readers first, then the mapping: this names every entry of
    the mapping that would break it (the version is the encoder's return type).
    """
    unreadable = []
    for internal, (_, encode) in published.items():
        version = get_type_hints(encode)["return"]
        if (version.TYPE, version.VERSION) not in readers:
            unreadable.append(
                f"{internal.__qualname__} -> {version.TYPE} v{version.VERSION}"
            )
    return unreadable
