"""Each role's process runs its main coroutine on uvloop, as `club api` does."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from entrypoints.runtime.roles import _run_role

pytestmark = pytest.mark.unit


def test_a_role_runs_on_uvloop_and_its_loop_is_closed_after() -> None:
    seen: list[asyncio.AbstractEventLoop] = []

    async def main() -> None:
        seen.append(asyncio.get_running_loop())

    _run_role(main())
    [loop] = seen
    assert isinstance(loop, uvloop.Loop)
    assert loop.is_closed()


def test_a_role_s_error_reaches_its_caller() -> None:
    async def main() -> None:
        raise LookupError("the role failed")

    with pytest.raises(LookupError, match="the role failed"):
        _run_role(main())
