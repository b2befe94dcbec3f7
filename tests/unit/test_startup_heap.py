"""A role freezes what start-up built, so a full collection skips it."""

from __future__ import annotations

import gc
import weakref

from entrypoints.runtime.startup_heap import freeze_startup_heap


def test_what_start_up_built_is_frozen_and_its_garbage_collected_first() -> None:
    class Cycle:
        def __init__(self) -> None:
            self.me = self

    gc.unfreeze()
    try:
        built = [object() for _ in range(100)]  # noqa: F841 - alive through start-up
        garbage = weakref.ref(Cycle())  # start-up's garbage: a cycle, unreachable
        freeze_startup_heap()
        assert gc.get_freeze_count() > 0
        assert garbage() is None  # collected, not frozen for good
    finally:
        gc.unfreeze()
