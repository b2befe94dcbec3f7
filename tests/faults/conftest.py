from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import scratch_dir
from tests.stack import FAST_FAULTS, Stack


@pytest.fixture(scope="module")
def stack(migrated: tuple[str, str]) -> Iterator[Stack]:
    stack = Stack(*migrated, scratch_dir("club-faults-logs-"), **FAST_FAULTS)
    stack.start_all()
    yield stack
    stack.stop_all()
