"""What a role built to serve lives as long as its process: frozen out of the
garbage collector's full passes.

A full collection walks every object the collector tracks: the whole import
graph and what the role built (FastAPI and pydantic's schemas, SQLAlchemy,
eventsourcing, nats-py). Under load it paused the API for 55-75 ms about every
30 s, and the relay and the projector for 50-75 ms, long enough to set a round's
p99 alone. Frozen once the role is built, those objects are skipped: the API's
passes took 3-14 ms (docs/benchmarks.md, "The tail at three quarters of the
capacity"). Every long-lived role freezes: the API, the relay, the projectors,
the workers and the saga.
"""

from __future__ import annotations

import gc

import structlog

log = structlog.get_logger()


def freeze_startup_heap() -> None:
    """Collect what start-up left as garbage, then freeze the rest for good."""
    gc.collect()
    gc.freeze()
    log.info("startup_heap.frozen", objects=gc.get_freeze_count())
