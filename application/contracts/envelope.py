"""The published event envelope (CONTRACT §5) and its JSON form."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

SUBJECT_PREFIX = "club.events"


class MalformedEnvelopeError(ValueError):
    """A message body is not a Club envelope."""


@attrs.frozen(kw_only=True)
class Envelope:
    event_id: UUID
    type: str
    schema_version: int
    aggregate: str  # the subject token; not part of the body
    aggregate_id: UUID
    aggregate_version: int
    occurred_at: datetime
    data: dict[str, Any]

    @property
    def subject(self) -> str:
        return f"{SUBJECT_PREFIX}.{self.aggregate}.{self.type}"

    def to_json(self) -> bytes:
        body = {
            "event_id": str(self.event_id),
            "type": self.type,
            "schema_version": self.schema_version,
            "aggregate_id": str(self.aggregate_id),
            "aggregate_version": self.aggregate_version,
            "occurred_at": _rfc3339(self.occurred_at),
            "data": self.data,
        }
        return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def from_json(cls, subject: str, body: bytes) -> Envelope:
        try:
            raw = json.loads(body)
            aggregate = subject.split(".")[2]
            return cls(
                event_id=UUID(raw["event_id"]),
                type=str(raw["type"]),
                schema_version=int(raw["schema_version"]),
                aggregate=aggregate,
                aggregate_id=UUID(raw["aggregate_id"]),
                aggregate_version=int(raw["aggregate_version"]),
                occurred_at=datetime.fromisoformat(raw["occurred_at"]),
                data=dict(raw["data"]),
            )
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise MalformedEnvelopeError(f"not a Club event envelope: {e}") from e


def _rfc3339(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("occurred_at must be time-zone aware")
    return moment.isoformat().replace("+00:00", "Z")
