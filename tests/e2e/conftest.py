from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.stack import running_stack
from tests.servers import scratch_dir


@pytest.fixture(scope="module")
def api(migrated: tuple[str, str]) -> Iterator[str]:
    database_url, nats_url = migrated
    with running_stack(database_url, nats_url, scratch_dir("club-e2e-logs-")) as base:
        yield base
