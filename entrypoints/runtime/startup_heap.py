"""What the API built to serve lives as long as its process: frozen out of the
garbage collector's full passes.

A full collection walks every object the collector tracks. In `club api` that is
the whole import graph and the app (FastAPI, pydantic's schemas, SQLAlchemy,
eventsourcing): under load it paused the API for 55-75 ms about every 30 s, long
enough to set a round's p99 alone. Frozen once the app is built, those objects are
skipped: the passes took 3-14 ms (docs/benchmarks.md, "The tail at three quarters
of the capacity").
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Collect what start-up left as garbage, then freeze the rest for good."""
    gc.collect()
    gc.freeze()
