"""One codec for every published event version: msgspec reads and writes the attrs
classes, so a version is its fields and nothing else (no to_data/from_data pair).

Writing: `to_data` is msgspec's `to_builtins` (UUID -> str, time -> RFC 3339 with `Z`
for UTC, as `rfc3339` wrote); the relay skips even that and encodes the whole body in
one pass (`envelope.py:Envelope.to_json`).

Reading is stricter than the hand-written readers were, never looser: an int field
refuses `"12"`, `12.7`, `true`; a str field refuses a number or null; a time must be
RFC 3339 with an offset (a naive or date-only time is refused, where
`datetime.fromisoformat` let it through). msgspec alone would accept two things
`fromisoformat` refused — a lower-case `t`/`z` and more than six fraction digits
(rounded) — so times are matched against `RFC3339_TIME` first.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Annotated, Any, ClassVar, Self

import attrs
import msgspec

# What decoding a time field accepts (msgspec refuses a naive one as well).
AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]

# The RFC 3339 forms both msgspec and `datetime.fromisoformat` read the same way.
RFC3339_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})"
)


def published_time(_: object, attribute: attrs.Attribute[Any], moment: Any) -> None:
    """attrs validator: a published time is an instant RFC 3339 can write.

    A naive time has no instant, and an offset with seconds has no RFC 3339 form
    (msgspec would drop the seconds, a wrong instant): refused, never guessed — the
    relay dead-letters such an event instead of publishing a wrong time.
    """
    offset = moment.utcoffset()
    if offset is None:
        msg = f"{attribute.name}: a published time must be time-zone aware"
        raise ValueError(msg)
    if offset % timedelta(minutes=1):
        msg = f"{attribute.name}: offset {offset} is not whole minutes (RFC 3339)"
        raise ValueError(msg)


optional_published_time = attrs.validators.optional(published_time)


class PublishedContract:
    """Base of every published event version (an attrs class with TYPE, VERSION)."""

    __slots__ = ()

    TYPE: ClassVar[str]
    VERSION: ClassVar[int]

    def to_data(self) -> dict[str, Any]:
        """The event's `data` object, as published."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Self:
        """Read a published `data` object, or raise (ValueError, msgspec's
        ValidationError) — `mapping.decode` turns either into a malformed envelope."""
        for name in _time_fields(cls):
            text = data.get(name)
            if type(text) is str and not RFC3339_TIME.fullmatch(text):
                msg = f"{name}: {text!r} is not an RFC 3339 time with an offset"
                raise ValueError(msg)
        return msgspec.convert(data, cls)


def _time_fields(cls: type[Any]) -> tuple[str, ...]:
    """The fields of a version that hold a time (its annotation names datetime)."""
    names = _TIME_FIELDS.get(cls)
    if names is None:
        names = _TIME_FIELDS[cls] = tuple(
            field.name
            for field in attrs.fields(cls)
            if "datetime" in str(field.type) or "AwareDatetime" in str(field.type)
        )
    return names


_TIME_FIELDS: dict[type[Any], tuple[str, ...]] = {}
