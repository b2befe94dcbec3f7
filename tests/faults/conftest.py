from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import scratch_dir
from tests.stack import FAST_FAULTS, Stack, running_stack


@pytest.fixture(scope="module")
def stack(migrated: tuple[str, str]) -> Iterator[Stack]:
    logs = scratch_dir("club-faults-logs-")
    with running_stack(migrated, logs, **FAST_FAULTS) as stack:
        yield stack
