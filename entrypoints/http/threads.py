"""A route's blocking work, handed to a thread in one step.

Starlette's `run_in_threadpool` goes through anyio (its capacity limiter, a
cancel scope, a worker queue): ~7% of an enrollment's API CPU. The event loop's
own `run_in_executor` is one future and one wake-up. As many threads as anyio's
default limiter allows (40); the request's context variables (its request id in
the logs) go along, as they do with anyio.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
THREADS = 40

_POOL = ThreadPoolExecutor(THREADS, thread_name_prefix="club-http")


async def in_thread(work: Callable[[], T]) -> T:
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_POOL, context.run, work)
