"""What a published event means, whichever schema version carried it.

A consumer's inbox keeps this digest per event id to tell a redelivery or republish
(same meaning) from a broken contract (same id, other meaning). Bytes would not do:
after the relay switches from v1 to v2, a rewind republishes old events as v2, and
the v1 copies already consumed must not look like conflicts.

The digest covers the ids and the event's data upcast to the current version, kept
to the fields that *every* published version of its type carries: a field added in
v2 is unknown (None) in an upcast v1 copy, and that absence is no contradiction.
"""

from __future__ import annotations

import hashlib
from datetime import UTC

import attrs

from application.contracts.envelope import Envelope, canonical_json
from application.contracts.events import EVERY_VERSION
from application.contracts.mapping import decode


def _fields_every_version_carries() -> dict[str, frozenset[str]]:
    shared: dict[str, frozenset[str]] = {}
    for cls in EVERY_VERSION:
        names = frozenset(field.name for field in attrs.fields(cls))
        shared[cls.TYPE] = shared.get(cls.TYPE, names) & names
    return shared


SHARED_FIELDS = _fields_every_version_carries()


def meaning_digest(envelope: Envelope) -> bytes:
    """sha256 of the canonical JSON of the event's ids and shared, upcast data.

    Raises what `decode` raises for an envelope no reader can read.
    """
    current = decode(envelope).to_data()
    shared = SHARED_FIELDS[envelope.type]
    canonical = {
        "event_id": str(envelope.event_id),
        "type": envelope.type,
        "aggregate_id": str(envelope.aggregate_id),
        "aggregate_version": envelope.aggregate_version,
        "occurred_at": envelope.occurred_at.astimezone(UTC).isoformat(),
        "data": {key: value for key, value in current.items() if key in shared},
    }
    # json.dumps's bytes (sort_keys, compact, ASCII), written faster: digests
    # already kept in inboxes must come out the same.
    return hashlib.sha256(canonical_json(canonical)).digest()
