from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import scratch_dir
from tests.stack import Stack


@pytest.fixture(scope="module")
def api(migrated: tuple[str, str]) -> Iterator[str]:
    stack = Stack(*migrated, scratch_dir("club-e2e-logs-"))
    stack.start_all()
    yield stack.base
    stack.stop_all()
