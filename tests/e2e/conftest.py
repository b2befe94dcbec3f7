from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import scratch_dir
from tests.stack import Stack


@pytest.fixture(scope="module")
def stack(migrated: tuple[str, str], request: pytest.FixtureRequest) -> Iterator[Stack]:
    """Every role of Club as processes on this module's servers, logs per module."""
    module = request.module.__name__.rsplit(".", 1)[-1]
    stack = Stack(*migrated, scratch_dir(f"club-{module}-logs-"))
    stack.start_all()
    yield stack
    stack.stop_all()


@pytest.fixture(scope="module")
def api(stack: Stack) -> str:
    return stack.base
