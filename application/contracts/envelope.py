"""The published event envelope (docs/events.md) and its JSON form."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Annotated, Any
from uuid import UUID

import attrs
import msgspec
import orjson

from application.contracts.codec import RFC3339_TIME, PublishedContract
from application.contracts.rfc3339 import rfc3339

SUBJECT_PREFIX = "club.events"


class MalformedEnvelopeError(ValueError):
    """A message body is not a Club envelope."""


@attrs.frozen(kw_only=True, eq=False)
class Envelope:
    """One published event: the body's fields, the subject token, and either the
    data as read from a body or the published version it was mapped to (the relay's
    envelopes: their data is written straight from it, see `to_json`)."""

    event_id: UUID
    type: str
    schema_version: int
    aggregate: str  # the subject token; not part of the body
    aggregate_id: UUID
    aggregate_version: int
    occurred_at: datetime
    _data: dict[str, Any] | None = None  # given as data=...
    published: PublishedContract | None = attrs.field(default=None, repr=False)
    # The event `decode` read from it, kept: a consumer reads each message twice
    # (its meaning digest, then its projection). Never copied by `attrs.evolve`.
    _decoded: Any = attrs.field(default=None, init=False, repr=False)

    @property
    def subject(self) -> str:
        return f"{SUBJECT_PREFIX}.{self.aggregate}.{self.type}"

    @property
    def data(self) -> dict[str, Any]:
        if self._data is not None:
            return self._data
        if self.published is None:
            raise MalformedEnvelopeError("an envelope needs data or a published event")
        return self.published.to_data()

    def remembered(self) -> Any:
        """What `decode` read from this envelope before, or None."""
        return self._decoded

    def remember(self, event: Any) -> None:
        object.__setattr__(self, "_decoded", event)  # a cache, not a field's value

    __hash__ = None  # type: ignore[assignment]  # it holds a dict, as it always did

    def __eq__(self, other: object) -> bool:
        """The same event whichever way its data is held (read or mapped)."""
        if not isinstance(other, Envelope):
            return NotImplemented
        return self._identity() == other._identity()

    def _identity(self) -> tuple[Any, ...]:
        return (
            self.event_id,
            self.type,
            self.schema_version,
            self.aggregate,
            self.aggregate_id,
            self.aggregate_version,
            self.occurred_at,
            self.data,
        )

    def to_json(self) -> bytes:
        """The body as json.dumps(sort_keys, compact, ASCII) writes it, byte for byte.

        A mapped envelope is written by msgspec in one pass, published version and
        all (no data dict in between); a body that is not printable ASCII (a title
        like "Café": about 0.2% of events) or that msgspec cannot write is written
        again the standard library's way, which escapes it. The bytes must not
        move: inbox rows written before the meaning digests hold the body's sha256.
        """
        if self.published is not None and _whole_minutes(self.occurred_at):
            try:
                encoded = _ENCODER.encode(
                    {
                        "event_id": self.event_id,
                        "type": self.type,
                        "schema_version": self.schema_version,
                        "aggregate_id": self.aggregate_id,
                        "aggregate_version": self.aggregate_version,
                        "occurred_at": self.occurred_at,
                        "data": self.published,
                    }
                )
            except (msgspec.EncodeError, UnicodeEncodeError, TypeError, ValueError):
                pass  # a lone surrogate, say: json.dumps escapes it
            else:
                if encoded.isascii() and b"\x7f" not in encoded:
                    return encoded
        body = {
            "event_id": str(self.event_id),
            "type": self.type,
            "schema_version": self.schema_version,
            "aggregate_id": str(self.aggregate_id),
            "aggregate_version": self.aggregate_version,
            "occurred_at": rfc3339(self.occurred_at),
            "data": self.data,
        }
        return canonical_json(body)

    @classmethod
    def from_json(cls, subject: str, body: bytes) -> Envelope:
        """Read a published body, or raise MalformedEnvelopeError whatever is wrong.

        Anyone who can publish may send anything: bytes that are not UTF-8, a JSON
        array, a number where an id belongs, `1e999999`, nesting deep enough to
        exhaust the parser. Every failure of reading becomes the one error a
        consumer dead-letters, so no body can make it exit. msgspec reads the body
        in one typed pass, as strictly as the checks it replaced: `true` is no
        version, "5" no int, an id must be a UUID, a time must carry its offset.
        """
        try:
            raw = _DECODER.decode(body)
            return cls(
                event_id=raw.event_id,
                type=raw.type,
                schema_version=raw.schema_version,
                aggregate=subject.split(".")[2],
                aggregate_id=raw.aggregate_id,
                aggregate_version=raw.aggregate_version,
                occurred_at=datetime.fromisoformat(raw.occurred_at),
                data=raw.data,
            )
        except Exception as e:
            msg = f"not a Club event envelope: {type(e).__name__}: {e}"
            raise MalformedEnvelopeError(msg) from e


class _Body(msgspec.Struct, frozen=True):
    """A published body as read: every field required, each of exactly its type."""

    event_id: UUID
    type: str
    schema_version: int
    aggregate_id: UUID
    aggregate_version: int
    # Matched as text, then read by fromisoformat: msgspec alone would also take a
    # lower-case `t`/`z` and a seventh fraction digit, which were refused before.
    occurred_at: Annotated[str, msgspec.Meta(pattern=f"^{RFC3339_TIME.pattern}$")]
    data: dict[str, Any]


_ENCODER = msgspec.json.Encoder(order="sorted")
_DECODER = msgspec.json.Decoder(_Body)


def _whole_minutes(moment: datetime) -> bool:
    """msgspec writes offsets to the minute; anything else (or a naive time, which
    `rfc3339` then refuses) goes the standard library's way."""
    offset = moment.utcoffset()
    return offset is not None and not offset % _MINUTE


_MINUTE = timedelta(minutes=1)


# Values orjson writes exactly as json.dumps does. Floats differ (`1e-05` against
# `0.00001`, NaN against null) and orjson would quietly write a UUID or a datetime
# that json.dumps refuses; subclasses (enums) are left to json.dumps as well.
_PLAIN = frozenset({str, int, bool, type(None)})


def canonical_json(body: dict[str, Any]) -> bytes:
    """json.dumps(sort_keys, compact, ASCII) byte for byte, about 3x faster.

    The relay and the rebuild encode every published event: orjson where its bytes
    are the same, the standard library for anything else. The bytes must not move:
    inbox rows written before the meaning digests hold the body's sha256.
    """
    data = body["data"]
    if (
        type(data) is dict
        and all(type(v) in _PLAIN for k, v in body.items() if k != "data")
        and all(type(v) in _PLAIN for v in data.values())
    ):
        try:
            encoded = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:  # an int beyond 64 bits, a non-str key
            pass
        else:
            # json.dumps escapes all but printable ASCII as \uXXXX; orjson only
            # control characters, so DEL and anything beyond ASCII go to json.dumps.
            if encoded.isascii() and b"\x7f" not in encoded:
                return encoded
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
