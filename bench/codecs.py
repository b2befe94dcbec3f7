"""Event codecs side by side: the hand-written to_data/from_data (before issue #10,
kept in bench/handwritten_codec.py), cattrs and msgspec, and JSON by the standard
library, orjson and msgspec.json (issue #10's codec item). The "production" rows run
the code as it is: msgspec since issue #10, the relay's body in one pass.

In-process, no servers: `python -m bench.codecs [EVENTS]`. The notifications come from
a ClubApplication on the library's in-memory recorder, whose stored bytes are the ones
PostgreSQL keeps. Two paths are timed, each as a median of RUNS runs over EVENTS
published events:

- relay:    notification -> domain event -> published class -> data -> JSON bytes
- consumer: JSON bytes -> envelope -> the current version of the event (upcast)

A codec is worth adopting only if it is faster AND reads and writes the same events.
Bytes matter less since the inbox compares meaning digests, but not nothing: inbox
rows written before that change hold the body's sha256, so a relay that encodes an
old event differently after an upgrade would make its republish (a crash before the
position moved, `club relay rewind`) look like a contract conflict there. Every
variant is therefore checked against the production code event by event, on the
stored examples and on hostile data, and the differences are printed.

Timing is CPU time of this process with the garbage collector paused, the variants
measured round-robin: the machine is shared, and neither another process's burst nor
a collection triggered by an earlier variant's garbage should count against a codec.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, get_type_hints
from uuid import UUID, uuid4

import attrs
import cattrs
import msgspec
import orjson
from eventsourcing.persistence import Mapper, Notification
from eventsourcing.utils import get_topic

from application.club import ClubApplication
from application.contracts.envelope import SUBJECT_PREFIX, Envelope, canonical_json
from application.contracts.events import (
    EVERY_VERSION,
    READERS,
    CurrentEvent,
    EnrollmentConfirmedV1,
    EnrollmentConfirmedV2,
    PublishedEvent,
)
from application.contracts.mapping import PUBLISHED, decode, published_envelope
from application.contracts.meaning import meaning_digest
from application.ids import event_id
from bench import handwritten_codec
from domain.enrollment import Enrollment
from domain.lesson import Lesson

RUNS = 5
EVENTS = 100_000
EXAMPLES = Path(__file__).parent.parent / "tests" / "contracts" / "examples"
RESULTS = Path(__file__).parent / "results" / "codecs.json"

Data = dict[str, Any]
ToData = Callable[[PublishedEvent], Data]
Read = Callable[[Data], CurrentEvent]
Encode = Callable[[Data], bytes]
Parse = Callable[[bytes], Any]


# -- the three codecs: event <-> data ------------------------------------------------


def _rfc3339(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _cattrs_converter() -> cattrs.Converter:
    """cattrs with the hooks that keep the hand-written codec's forms exactly.

    Without `detailed_validation=False` a bad field raises an ExceptionGroup, which
    `decode` does not catch: the consumer's whole batch would fail, not one message.
    """
    converter = cattrs.Converter(detailed_validation=False)
    converter.register_unstructure_hook(UUID, str)
    converter.register_unstructure_hook(datetime, _rfc3339)
    converter.register_structure_hook(UUID, lambda value, _: UUID(value))
    converter.register_structure_hook(
        datetime, lambda value, _: datetime.fromisoformat(value)
    )
    return converter


def _readers(structure: Callable[[Data, type[Any]], Any]) -> dict[Any, Read]:
    """The READERS table, built on another codec: same keys, same upcast."""

    def upcast_v1(data: Data) -> CurrentEvent:
        return EnrollmentConfirmedV2.upcast(structure(data, EnrollmentConfirmedV1))

    table: dict[Any, Read] = {}
    for cls in EVERY_VERSION:
        key = (cls.TYPE, cls.VERSION)
        if cls is EnrollmentConfirmedV1:
            table[key] = upcast_v1
        else:
            table[key] = functools.partial(_structure_as, structure, cls)
    return table


def _structure_as(
    structure: Callable[[Data, type[Any]], Any], cls: type[Any], data: Data
) -> Any:
    return structure(data, cls)


@attrs.frozen
class Codec:
    name: str
    to_data: ToData
    readers: dict[Any, Read]


def codecs() -> list[Codec]:
    for cls in (*EVERY_VERSION, AwareLessonScheduledV1):
        attrs.resolve_types(cls)
    converter = _cattrs_converter()
    return [
        Codec(
            "hand-written",
            handwritten_codec.to_data,
            _readers(handwritten_codec.structure),
        ),
        Codec("cattrs", converter.unstructure, _readers(converter.structure)),
        Codec("msgspec", msgspec.to_builtins, _readers(msgspec.convert)),
    ]


# -- the three JSON libraries ---------------------------------------------------------

_msgspec_encoder = msgspec.json.Encoder(order="sorted")
_msgspec_decoder = msgspec.json.Decoder()
ENCODERS: dict[str, Encode] = {
    "json": lambda body: json.dumps(
        body, separators=(",", ":"), sort_keys=True
    ).encode(),
    "orjson": lambda body: orjson.dumps(body, option=orjson.OPT_SORT_KEYS),
    "msgspec.json": _msgspec_encoder.encode,
}
# Whole bodies only: orjson where its bytes equal json.dumps's (the relay's encoder
# from issue #14 until #10; it still writes envelopes read back from a body).
RELAY_ENCODERS: dict[str, Encode] = ENCODERS | {"canonical_json": canonical_json}
PARSERS: dict[str, Parse] = {
    "json": json.loads,
    "orjson": orjson.loads,
    "msgspec.json": _msgspec_decoder.decode,
}


# -- the workload ---------------------------------------------------------------------


def published_notifications(events: int) -> tuple[Mapper[UUID], list[Notification]]:
    """`events` stored notifications that the relay publishes, in log order: per
    lesson one LessonScheduled, 100 EnrollmentConfirmed and 10 EnrollmentCancelled;
    every fifth lesson has a title outside ASCII, as real titles do ("Café")."""
    app = ClubApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    topics = {get_topic(cls) for cls in PUBLISHED}
    start = datetime(2027, 1, 1, 10, tzinfo=UTC)
    count, lessons = 0, 0
    while count < events:
        title = "Café yoga" if lessons % 5 == 0 else "Morning yoga"
        lesson = Lesson.schedule(
            lesson_id=uuid4(), title=title, capacity=100,
            starts_at=start + timedelta(days=lessons), price_cents=0,
        )  # fmt: skip
        enrollments = []
        for n in range(100):
            enrollment_id = uuid4()
            lesson.take_seat(enrollment_id=enrollment_id, student_id=f"s-{n}")
            enrollments.append(
                Enrollment.confirm(
                    enrollment_id=enrollment_id,
                    lesson_id=lesson.id,
                    student_id=f"s-{n}",
                    request_id=str(enrollment_id),
                    lesson_starts_at=lesson.starts_at,
                )
            )
        for enrollment in enrollments[:10]:
            enrollment.cancel(reason="schedule clash")
            lesson.release_seat(enrollment_id=enrollment.id)
        app.save(lesson, *enrollments)
        count, lessons = count + 111, lessons + 1
    notifications = app.recorder.select_notifications(start=1, limit=10 * events)
    mapper = app.mapper
    app.close()
    return mapper, [n for n in notifications if n.topic in topics][:events]


# -- the relay's path -----------------------------------------------------------------


def relay_body(mapper: Mapper[UUID], n: Notification, to_data: ToData) -> Data:
    """What `published_envelope` + `Envelope.to_json` build, with the codec swapped."""
    domain_event: Any = mapper.to_domain_event(n)
    _, encode = PUBLISHED[type(domain_event)]
    published = encode(domain_event)
    return {
        "event_id": str(
            event_id(domain_event.originator_id, domain_event.originator_version)
        ),
        "type": published.TYPE,
        "schema_version": published.VERSION,
        "aggregate_id": str(domain_event.originator_id),
        "aggregate_version": domain_event.originator_version,
        "occurred_at": _rfc3339(domain_event.timestamp),
        "data": to_data(published),
    }


def relay_bytes(
    mapper: Mapper[UUID],
    notifications: Sequence[Notification],
    codec: Codec,
    json_name: str,
) -> list[bytes]:
    encode = RELAY_ENCODERS[json_name]
    return [encode(relay_body(mapper, n, codec.to_data)) for n in notifications]


def relay_one_pass(
    mapper: Mapper[UUID], notifications: Sequence[Notification]
) -> list[bytes]:
    """msgspec encodes the published attrs object inside the body in one pass: no
    intermediate data dict, datetimes and UUIDs written by msgspec itself."""
    out = []
    for n in notifications:
        domain_event: Any = mapper.to_domain_event(n)
        _, encode = PUBLISHED[type(domain_event)]
        published = encode(domain_event)
        out.append(
            _msgspec_encoder.encode(
                {
                    "event_id": event_id(
                        domain_event.originator_id, domain_event.originator_version
                    ),
                    "type": published.TYPE,
                    "schema_version": published.VERSION,
                    "aggregate_id": domain_event.originator_id,
                    "aggregate_version": domain_event.originator_version,
                    "occurred_at": domain_event.timestamp,
                    "data": published,
                }
            )
        )
    return out


def relay_one_pass_ascii(
    mapper: Mapper[UUID], notifications: Sequence[Notification]
) -> list[bytes]:
    """One pass, but a body outside ASCII is written again by the standard library,
    which escapes it (`\\u00e9`): the same bytes as today for every event."""
    fast = relay_one_pass(mapper, notifications)
    return [body if body.isascii() else _reencode_ascii(body) for body in fast]


def _reencode_ascii(body: bytes) -> bytes:
    return ENCODERS["json"](json.loads(body))


def relay_current(
    mapper: Mapper[UUID], notifications: Sequence[Notification]
) -> list[bytes]:
    """The production code, unchanged: the baseline every variant must equal."""
    out = []
    for n in notifications:
        envelope = published_envelope(mapper, n)
        assert envelope is not None
        out.append(envelope.to_json())
    return out


# -- the consumer's path --------------------------------------------------------------


def consume(
    messages: Sequence[tuple[str, bytes]], codec: Codec, json_name: str
) -> list[CurrentEvent]:
    """What `Envelope.from_json` + `decode` do, with the parser and codec swapped."""
    parse, readers = PARSERS[json_name], codec.readers
    out = []
    for subject, body in messages:
        raw = parse(body)
        envelope = Envelope(
            event_id=UUID(raw["event_id"]),
            type=str(raw["type"]),
            schema_version=int(raw["schema_version"]),
            aggregate=subject.split(".")[2],
            aggregate_id=UUID(raw["aggregate_id"]),
            aggregate_version=int(raw["aggregate_version"]),
            occurred_at=datetime.fromisoformat(raw["occurred_at"]),
            data=dict(raw["data"]),
        )
        out.append(readers[(envelope.type, envelope.schema_version)](envelope.data))
    return out


def consume_current(messages: Sequence[tuple[str, bytes]]) -> list[CurrentEvent]:
    return [decode(Envelope.from_json(subject, body)) for subject, body in messages]


def consume_read(messages: Sequence[tuple[str, bytes]]) -> list[tuple[bytes, bytes]]:
    """What the consumer runner's `_read` does per message today: the envelope, its
    meaning digest (which decodes it and encodes the data again) and the body hash.
    The projection's `apply` then decodes it once more."""
    return [
        (
            meaning_digest(Envelope.from_json(subject, body)),
            hashlib.sha256(body).digest(),
        )
        for subject, body in messages
    ]


# -- timing ---------------------------------------------------------------------------


def cpu_seconds(work: Callable[[], Sequence[Any]]) -> float:
    """CPU time of this process, not wall time: the machine is shared, and another
    process's burst must not count as this codec's slowness. The garbage collector
    is paused while timing: when it runs depends on everything allocated before,
    so it would land on whichever variant happened to cross its threshold."""
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        work()
        return time.process_time() - start
    finally:
        gc.enable()


def relay_stages(mapper: Mapper[UUID], notifications: Sequence[Notification]) -> Data:
    """Where the relay's Python time goes today, stage by stage (one run, the
    collector paused as in `cpu_seconds`)."""
    gc.collect()
    gc.disable()
    try:
        return _stages(mapper, notifications)
    finally:
        gc.enable()


def _stages(mapper: Mapper[UUID], notifications: Sequence[Notification]) -> Data:
    marks = [time.process_time()]
    domain_events: list[Any] = [mapper.to_domain_event(n) for n in notifications]
    marks.append(time.process_time())
    published = [PUBLISHED[type(e)][1](e) for e in domain_events]
    marks.append(time.process_time())
    data = [p.to_data() for p in published]
    marks.append(time.process_time())
    encode = ENCODERS["json"]
    for e, p, d in zip(domain_events, published, data, strict=True):
        encode({"event_id": str(event_id(e.originator_id, e.originator_version)),
                "type": p.TYPE, "schema_version": p.VERSION,
                "aggregate_id": str(e.originator_id),
                "aggregate_version": e.originator_version,
                "occurred_at": _rfc3339(e.timestamp), "data": d})  # fmt: skip
    marks.append(time.process_time())
    names = ["stored -> domain event (library mapper)", "domain -> published class",
             "to_data", "envelope + json.dumps"]  # fmt: skip
    seconds = [b - a for a, b in itertools.pairwise(marks)]
    total = sum(seconds)
    return {
        name: round(100 * s / total, 1) for name, s in zip(names, seconds, strict=True)
    }


# -- equivalence checks ---------------------------------------------------------------


def mismatches(expected: Sequence[Any], got: Sequence[Any]) -> int:
    return sum(1 for a, b in zip(expected, got, strict=True) if a != b)


def subject_tokens() -> dict[str, str]:
    """Event type -> its subject token, from the mapping table (the encoder's return
    type names the published type)."""
    return {
        get_type_hints(encode)["return"].TYPE: token
        for token, encode in PUBLISHED.values()
    }


def example_checks(all_codecs: Sequence[Codec]) -> list[str]:
    """Each stored example decodes to the same event under every codec and parser,
    and re-encodes to the same bytes as the hand-written codec's (empty: all equal)."""
    failures = []
    token = subject_tokens()
    for path in sorted(EXAMPLES.glob("*/v*.json")):
        name = f"{path.parent.name}/{path.name}"
        subject = f"{SUBJECT_PREFIX}.{token[path.parent.name]}.{path.parent.name}"
        body = path.read_bytes()
        [expected] = consume_current([(subject, body)])
        cls = {(c.TYPE, c.VERSION): c for c in EVERY_VERSION}[
            (path.parent.name, int(path.stem[1:]))
        ]
        data = json.loads(body)["data"]
        as_stored = ENCODERS["json"](
            handwritten_codec.to_data(handwritten_codec.structure(data, cls))
        )
        for codec in all_codecs:
            for parser in PARSERS:
                [got] = consume([(subject, body)], codec, parser)
                if got != expected:
                    failures.append(f"{name}: {codec.name}+{parser} decodes {got!r}")
            for encoder, encode in ENCODERS.items():
                again = encode(codec.to_data(_structure(codec, cls, data)))
                if again != as_stored:
                    failures.append(f"{name}: {codec.name}+{encoder} writes {again!r}")
    return failures


def _structure(codec: Codec, cls: type[Any], data: Data) -> Any:
    """The codec's reader for exactly this version, without upcasting."""
    if codec.name == "hand-written":
        return handwritten_codec.structure(data, cls)
    if codec.name == "cattrs":
        return _cattrs_converter().structure(data, cls)
    return msgspec.convert(data, cls)


HOSTILE: dict[str, Data] = {
    "valid": {"lesson_id": str(UUID(int=1)), "title": "Yoga", "capacity": 12,
              "starts_at": "2026-12-01T10:00:00Z", "price_cents": 0},
    "missing field": {"lesson_id": str(UUID(int=1)), "title": "Yoga",
                      "starts_at": "2026-12-01T10:00:00Z", "price_cents": 0},
    "capacity as string": {"lesson_id": str(UUID(int=1)), "title": "Yoga",
                           "capacity": "12", "starts_at": "2026-12-01T10:00:00Z",
                           "price_cents": 0},
    "capacity as float 12.7": {"lesson_id": str(UUID(int=1)), "title": "Yoga",
                               "capacity": 12.7, "starts_at": "2026-12-01T10:00:00Z",
                               "price_cents": 0},
    "title as number": {"lesson_id": str(UUID(int=1)), "title": 7, "capacity": 12,
                        "starts_at": "2026-12-01T10:00:00Z", "price_cents": 0},
    "naive starts_at": {"lesson_id": str(UUID(int=1)), "title": "Yoga", "capacity": 12,
                        "starts_at": "2026-12-01T10:00:00", "price_cents": 0},
    "date-only starts_at": {"lesson_id": str(UUID(int=1)), "title": "Yoga",
                            "capacity": 12, "starts_at": "2026-12-01",
                            "price_cents": 0},
    "lesson_id not a uuid": {"lesson_id": "x", "title": "Yoga", "capacity": 12,
                             "starts_at": "2026-12-01T10:00:00Z", "price_cents": 0},
    "capacity as whole float 12.0": {"lesson_id": str(UUID(int=1)), "title": "Yoga",
                                     "capacity": 12.0,
                                     "starts_at": "2026-12-01T10:00:00Z",
                                     "price_cents": 0},
    "capacity as true": {"lesson_id": str(UUID(int=1)), "title": "Yoga",
                         "capacity": True, "starts_at": "2026-12-01T10:00:00Z",
                         "price_cents": 0},
    "lower-case t and z": {"lesson_id": str(UUID(int=1)), "title": "Yoga",
                           "capacity": 12, "starts_at": "2026-12-01t10:00:00z",
                           "price_cents": 0},
    "seven fraction digits": {"lesson_id": str(UUID(int=1)), "title": "Yoga",
                              "capacity": 12,
                              "starts_at": "2026-12-01T10:00:00.1234567Z",
                              "price_cents": 0},
    "extra field": {"lesson_id": str(UUID(int=1)), "title": "Yoga", "capacity": 12,
                    "starts_at": "2026-12-01T10:00:00Z", "price_cents": 0, "x": 1},
    "null title": {"lesson_id": str(UUID(int=1)), "title": None, "capacity": 12,
                   "starts_at": "2026-12-01T10:00:00Z", "price_cents": 0},
}  # fmt: skip


@attrs.frozen(kw_only=True)
class AwareLessonScheduledV1:
    """LessonScheduledV1 as msgspec would read it if adopted with one annotation:
    `msgspec.Meta(tz=True)` refuses a time without an offset, as the contract asks."""

    lesson_id: UUID
    title: str
    capacity: int
    starts_at: Annotated[datetime, msgspec.Meta(tz=True)]
    price_cents: int


def hostile_outcomes(all_codecs: Sequence[Codec]) -> dict[str, dict[str, str]]:
    """How each codec answers bad data in a LessonScheduled v1 body: accepted (and
    as what), or refused with which exception (`decode` dead-letters the message)."""
    readers: dict[str, Callable[[Data], Any]] = {
        codec.name: codec.readers[("LessonScheduled", 1)] for codec in all_codecs
    }
    readers["production"] = READERS[("LessonScheduled", 1)]
    readers["msgspec, tz=True"] = functools.partial(
        _structure_as, msgspec.convert, AwareLessonScheduledV1
    )
    table: dict[str, dict[str, str]] = {}
    for case, data in HOSTILE.items():
        row = {}
        for name, read in readers.items():
            try:
                event = read(data)
            except Exception as e:  # the point is to see which
                row[name] = f"refused ({type(e).__name__})"
            else:
                row[name] = (
                    f"accepted capacity={event.capacity!r} title={event.title!r} "
                    f"starts_at.tz={event.starts_at.tzname()}"
                )
        table[case] = row
    return table


# -- the report -----------------------------------------------------------------------


def main(events: int = EVENTS, runs: int = RUNS) -> Data:
    all_codecs = codecs()
    print(f"building {events:,} published notifications in memory ...", flush=True)
    mapper, notifications = published_notifications(events)
    subjects = [_subject(mapper, n) for n in notifications]
    current = relay_current(mapper, notifications)
    messages = list(zip(subjects, current, strict=True))
    expected_events = consume_current(messages)
    result: Data = {"events": events, "runs": runs}

    relay: list[Variant] = [
        ("production: Envelope.to_json", lambda: relay_current(mapper, notifications))
    ]
    relay += [
        (
            f"{codec.name} + {json_name}",
            functools.partial(relay_bytes, mapper, notifications, codec, json_name),
        )
        for codec in all_codecs
        for json_name in RELAY_ENCODERS
    ]
    relay += [
        (
            "msgspec one pass (no data dict)",
            lambda: relay_one_pass(mapper, notifications),
        ),
        (
            "msgspec one pass, json if not ASCII",
            lambda: relay_one_pass_ascii(mapper, notifications),
        ),
    ]
    result["relay"] = _rows(relay, current, runs, "hand-written + json")
    escaped = sum(1 for body in current if b"\\u" in body)
    result["non_ascii_share"] = round(escaped / len(current), 4)
    result["relay_stages_percent"] = relay_stages(mapper, notifications)

    consumer: list[Variant] = [
        ("production: from_json + decode", lambda: consume_current(messages)),
        ("production _read: + meaning_digest", lambda: consume_read(messages)),
    ]
    consumer += [
        (
            f"{json_name} + {codec.name}",
            functools.partial(consume, messages, codec, json_name),
        )
        for codec in all_codecs
        for json_name in PARSERS
    ]
    result["consumer"] = _rows(consumer, expected_events, runs, "json + hand-written")

    result["example_failures"] = example_checks(all_codecs)
    result["hostile"] = hostile_outcomes(all_codecs)
    result["digest_of_current"] = hashlib.sha256(b"".join(current)).hexdigest()[:16]
    _print(result)
    RESULTS.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return result


def _subject(mapper: Mapper[UUID], n: Notification) -> str:
    envelope = published_envelope(mapper, n)
    assert envelope is not None
    return envelope.subject


Variant = tuple[str, Callable[[], Sequence[Any]]]
CONTEXT_ONLY = "production _read"  # gives digests, not events: timed, not compared


def _rows(
    variants: Sequence[Variant], expected: Sequence[Any], runs: int, baseline: str
) -> list[Data]:
    """Each variant's events per CPU second (median of `runs`), its ratio to
    `baseline` (the hand-written codec with the standard library's json: the same
    envelope code, only the codec swapped), and how many of its events differ from
    what the production code gives (None: not comparable, shown for context).

    The runs go round-robin over the variants, so that a burst of load elsewhere
    falls on all of them alike rather than on one."""
    differ = {}
    for name, work in variants:  # also the untimed warm-up run
        got = work()
        comparable = not name.startswith(CONTEXT_ONLY)
        differ[name] = mismatches(expected, got) if comparable else None
    seconds: dict[str, list[float]] = {name: [] for name, _ in variants}
    for _ in range(runs):
        for name, work in variants:
            seconds[name].append(cpu_seconds(work))
    rate = {name: len(expected) / statistics.median(s) for name, s in seconds.items()}
    return [
        {
            "variant": name,
            "events_per_cpu_s": round(rate[name]),
            "ratio": round(rate[name] / rate[baseline], 2),
            "events_differing": differ[name],
        }
        for name, _ in variants
    ]


def _print(result: Data) -> None:
    for path in ("relay", "consumer"):
        print(f"\n{path} path, {result['events']:,} events, median of {result['runs']}")
        print(f"  {'variant':40} {'events/CPU s':>12} {'ratio':>6} {'differ':>7}")
        for row in result[path]:
            differ = row["events_differing"]
            differ = "-" if differ is None else f"{differ:,}"
            print(f"  {row['variant']:40} {row['events_per_cpu_s']:>12,} "
                  f"{row['ratio']:>6.2f} {differ:>7}")  # fmt: skip
    print(f"\nrelay's time today: {result['relay_stages_percent']}")
    print(f"events whose body is not ASCII: {result['non_ascii_share']:.1%}")
    failures = result["example_failures"]
    print(f"stored examples: {'all identical' if not failures else ''}")
    for failure in failures:
        print(f"  {failure}")
    print("\nhostile LessonScheduled v1 data:")
    for case, row in result["hostile"].items():
        print(f"  {case}:")
        for codec, outcome in row.items():
            print(f"    {codec:17} {outcome}")
    print(f"\nwritten to {RESULTS}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else EVENTS)
