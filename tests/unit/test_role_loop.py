"""Each role's process runs its main coroutine on uvloop, as `club api` does."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from entrypoints.runtime.role_loop import run_on_role_loop

pytestmark = pytest.mark.unit


def test_a_role_runs_on_uvloop_and_its_loop_is_closed_after_it() -> None:
    seen: list[asyncio.AbstractEventLoop] = []

    async def main() -> str:
        seen.append(asyncio.get_running_loop())
        return "its answer"

    assert run_on_role_loop(main()) == "its answer"
    [loop] = seen
    assert isinstance(loop, uvloop.Loop)
    assert loop.is_closed()


def test_a_role_s_error_reaches_its_caller() -> None:
    async def main() -> None:
        raise LookupError("the role failed")

    with pytest.raises(LookupError, match="the role failed"):
        run_on_role_loop(main())
