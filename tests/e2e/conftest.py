from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.stack import Stack, running_stack, scratch_for


@pytest.fixture(scope="module")
def stack(migrated: tuple[str, str], request: pytest.FixtureRequest) -> Iterator[Stack]:
    """Every role of Club as processes on this module's servers, logs per module."""
    with running_stack(migrated, scratch_for(request, "logs")) as stack:
        yield stack


@pytest.fixture(scope="module")
def api(stack: Stack) -> str:
    return stack.base
