"""A published event's stored state read in one msgspec pass, not the library's way.

The library's mapper reads a stored event with `json` and a Python hook called for
every object (its `JSONTranscoder`), ~5 µs an event; the relay and the rebuild read
every published event. Here one typed msgspec decode per domain event class reads
the same JSON into the same values, and the domain event is built the way the mapper
builds it (`object.__new__`, then its `__dict__`), so the mapping table's encoders
see what they always saw.

This reader only ever answers when it is sure to agree with the library: a state
it is not built for — a field of another JSON type than its annotation (a float
where an int belongs, a bool, a tagged value under another name), a field missing
or one it does not know,
an older `class_version` that needs the library's upcast, bytes that are not JSON —
is `None`, and the caller reads it the library's way (and gets the library's result
or error). `tests/unit/test_stored_state.py` checks the two agree.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, Union, get_type_hints
from uuid import UUID

import msgspec
from eventsourcing.persistence import Notification

_NOT_STATE = frozenset({"originator_id", "originator_version"})  # the row has them


class _StoredUuid(msgspec.Struct, forbid_unknown_fields=True):
    """`{"_type_": "uuid_hex", "_data_": ...}`: the library's UUIDAsHex, exactly
    two keys (a dict with more is no tagged value to the library either)."""

    type: Literal["uuid_hex"] = msgspec.field(name="_type_")
    data: UUID = msgspec.field(name="_data_")  # msgspec reads a subset of UUID()'s


class _StoredTime(msgspec.Struct, forbid_unknown_fields=True):
    """The library's DatetimeAsISO; the text is read by `fromisoformat`, as there."""

    type: Literal["datetime_iso"] = msgspec.field(name="_type_")
    data: str = msgspec.field(name="_data_")


def _uuid(value: _StoredUuid) -> UUID:
    return value.data


def _time(value: _StoredTime) -> datetime:
    return datetime.fromisoformat(value.data)


def _optional_time(value: _StoredTime | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value.data)


def _plain(value: Any) -> Any:
    return value


# Annotation -> (how msgspec reads the stored form, how it becomes the value).
_FIELD_KINDS: dict[Any, tuple[Any, Callable[[Any], Any]]] = {
    str: (str, _plain),
    int: (int, _plain),
    UUID: (_StoredUuid, _uuid),
    datetime: (_StoredTime, _time),
    datetime | None: (_StoredTime | None, _optional_time),
    str | None: (str | None, _plain),
}


class _Reader:
    """One domain event class's stored state: a msgspec Struct of its fields."""

    def __init__(self, cls: type[Any]) -> None:
        self.cls = cls
        self.class_version: int = getattr(cls, "class_version", 1)
        fields: list[tuple[str, Any]] = []
        self.convert: list[tuple[str, Callable[[Any], Any]]] = []
        for name, hint in get_type_hints(cls).items():
            if name in _NOT_STATE or typing.get_origin(hint) is typing.ClassVar:
                continue
            stored, convert = _FIELD_KINDS[_normalised(hint)]  # KeyError: unsupported
            fields.append((name, stored))
            self.convert.append((name, convert))
        fields.append(("class_version", int, 1))  # type: ignore[arg-type]
        # An unknown key goes the library's way: its hook reads tagged values at
        # any depth, and may raise on one where msgspec would skip the key.
        self.struct = msgspec.defstruct(
            f"Stored{cls.__qualname__}", fields, forbid_unknown_fields=True
        )
        self.decoder = msgspec.json.Decoder(self.struct)

    def read(self, notification: Notification) -> Any | None:
        try:
            stored = self.decoder.decode(notification.state)
        except msgspec.DecodeError:  # ValidationError too: the library decides
            return None
        if stored.class_version != self.class_version:  # type: ignore[attr-defined]
            return None  # the library upcasts it
        originator_id = notification.originator_id
        if type(originator_id) is not UUID:
            return None
        state = {name: convert(getattr(stored, name)) for name, convert in self.convert}
        state["originator_id"] = originator_id
        state["originator_version"] = notification.originator_version
        event = object.__new__(self.cls)
        object.__setattr__(event, "__dict__", state)  # as the library's mapper does
        return event


def _normalised(hint: Any) -> Any:
    """`Optional[X]` and `X | None` alike (X a datetime or a str); any other union
    as it is."""
    is_union = isinstance(hint, types.UnionType) or typing.get_origin(hint) is Union
    if is_union and set(typing.get_args(hint)) == {datetime, type(None)}:
        return datetime | None
    if is_union and set(typing.get_args(hint)) == {str, type(None)}:
        return str | None
    return hint


class StoredStateReader:
    """Domain events of the given classes, read from their stored state; topics
    this reader was not built for, or states it is not sure of, are None."""

    def __init__(self, topics: dict[str, type[Any]]) -> None:
        self._readers: dict[str, _Reader] = {}
        for topic, cls in topics.items():
            try:
                self._readers[topic] = _Reader(cls)
            except KeyError:
                continue  # a field type not read here: the library reads it

    def __contains__(self, topic: str) -> bool:
        return topic in self._readers

    def domain_event(self, notification: Notification) -> Any | None:
        reader = self._readers.get(notification.topic)
        return None if reader is None else reader.read(notification)
