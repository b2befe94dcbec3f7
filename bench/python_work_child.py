"""One measurement of `bench.python_work`, run in whichever code tree PYTHONPATH names.

`python bench/python_work_child.py WHAT DATABASE_URL NATS_URL` (WHAT: relay, catchup,
rebuild or stages) prints one JSON line: the events done, the wall seconds and the
CPU seconds of this process (all its threads: the relay's read thread too). Only the
roles' own entry points are used, so the same file measures the code before a change
and after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import sys
import time
from uuid import uuid4


def relay(database_url: str, nats_url: str) -> dict[str, float]:
    from nats.js.errors import NotFoundError  # noqa: PLC0415 - the tree's own imports

    from adapters.nats.relay_drain import relay_all  # noqa: PLC0415
    from adapters.nats.streams import EVENTS_STREAM, connect, ensure_streams  # noqa: PLC0415
    from entrypoints.config.settings import Settings  # noqa: PLC0415
    from entrypoints.runtime import bootstrap  # noqa: PLC0415

    settings = Settings.from_env(
        {"CLUB_DATABASE_URL": database_url, "CLUB_NATS_URL": nats_url}
    )
    container = bootstrap.build(database_url, pool_size=5)

    async def one() -> dict[str, float]:
        nc = await connect(nats_url, name="python-work-relay")
        js = nc.jetstream()
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(EVENTS_STREAM)
        await ensure_streams(js)
        relay = bootstrap.build_relay(
            settings, container, nc, name=f"work-{uuid4().hex[:6]}"
        )
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        await relay_all(relay)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        events = (await js.stream_info(EVENTS_STREAM)).state.messages
        await nc.close()
        return {"events": events, "wall": wall, "cpu": cpu}

    try:
        return asyncio.run(one())
    finally:
        container.close()


def rebuild(database_url: str, _: str) -> dict[str, float]:
    from adapters.postgres.rebuild import Rebuild  # noqa: PLC0415
    from entrypoints.runtime import bootstrap  # noqa: PLC0415
    from projections import statistics  # noqa: PLC0415

    container = bootstrap.build(database_url, pool_size=5)
    try:
        work = Rebuild(
            engine=container.engine,
            recorder=container.app.recorder,
            mapper=container.app.mapper,
            name=statistics.NAME,
            metadata=statistics.metadata,
            apply=statistics.apply,
        )
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        report = work.run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return {"events": report.events, "wall": wall, "cpu": cpu}
    finally:
        container.close()


def catchup(database_url: str, nats_url: str) -> dict[str, float]:
    """`club projector statistics`'s runner over the stream the relay published,
    from a fresh durable (bench/projection.py)."""
    from adapters.nats.streams import EVENTS_STREAM, connect  # noqa: PLC0415
    from bench.projection import club_catchup_rate  # noqa: PLC0415
    from entrypoints.runtime import bootstrap  # noqa: PLC0415

    async def stored() -> int:
        nc = await connect(nats_url, name="python-work-catchup")
        messages = (await nc.jetstream().stream_info(EVENTS_STREAM)).state.messages
        await nc.close()
        return int(messages)

    events = asyncio.run(stored())
    container = bootstrap.build(database_url, pool_size=5)
    try:
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        club_catchup_rate(container.engine, nats_url)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return {"events": events, "wall": wall, "cpu": cpu}
    finally:
        container.close()


def stages(_: str, __: str) -> dict[str, float]:
    """The relay's and the rebuild's Python steps per published event, in-process
    (no servers): CPU µs per event, the collector paused, best of 3 passes."""
    from application.contracts.mapping import decode, published_envelope  # noqa: PLC0415
    from application.contracts.meaning import meaning_digest  # noqa: PLC0415
    from bench.codecs import published_notifications  # noqa: PLC0415

    mapper, notifications = published_notifications(20_000)
    envelopes = [published_envelope(mapper, n) for n in notifications]
    steps = {
        "map": lambda: [published_envelope(mapper, n) for n in notifications],
        "to_json": lambda: [e.to_json() for e in envelopes],
        "decode": lambda: [decode(e) for e in envelopes],
        "meaning_digest": lambda: [meaning_digest(e) for e in envelopes],
    }
    best: dict[str, float] = {}
    for _ in range(3):
        for name, step in steps.items():
            gc.collect()
            gc.disable()
            start = time.process_time()
            step()
            seconds = time.process_time() - start
            gc.enable()
            per_event = 1e6 * seconds / len(notifications)
            best[name] = min(best.get(name, per_event), per_event)
    return best


if __name__ == "__main__":
    what, database_url, nats_url = sys.argv[1:4]
    measure = {
        "relay": relay,
        "catchup": catchup,
        "rebuild": rebuild,
        "stages": stages,
    }[what]
    print(json.dumps(measure(database_url, nats_url)))
