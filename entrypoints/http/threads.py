"""A route's blocking work, handed to a thread in one step.

Starlette's `run_in_threadpool` goes through anyio (its capacity limiter, a
cancel scope, a worker queue): ~7% of an enrollment's API CPU. The event loop's
`run_in_executor` is lighter but still ~5%: a concurrent future with its
condition lock, the executor's semaphore, and two futures chained by callbacks.
Here a thread takes the work from a C queue and settles the request's own
asyncio future on its loop: one put, one wake-up. As many threads as anyio's
default limiter allows (40); the request's context variables (its request id in
the logs) go along, as they do with anyio.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
THREADS = 40

_Work = Callable[[], Any]
_Job = tuple[
    asyncio.AbstractEventLoop, "asyncio.Future[Any]", contextvars.Context, _Work
]


class _Threads:
    """Daemon threads started at the first hand-off, not at import; a forked
    child, which has none of them, starts its own at its first."""

    def __init__(self, count: int) -> None:
        self._count = count
        self._forget()

    def _forget(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._started = False
        self._starting = threading.Lock()

    def put(self, job: _Job) -> None:
        if not self._started:
            self._start()
        self._jobs.put(job)

    def _start(self) -> None:
        with self._starting:
            if self._started:
                return
            for n in range(self._count):
                name = f"club-http_{n}"
                threading.Thread(target=self._serve, name=name, daemon=True).start()
            self._started = True

    def _serve(self) -> None:
        while True:
            _run(*self._jobs.get())  # a job's references go when it returns


def _run(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    context: contextvars.Context,
    work: _Work,
) -> None:
    result: object = None
    error: BaseException | None = None
    try:
        result = context.run(work)
    except BaseException as raised:  # the awaiting request's to raise
        error = _awaitable(raised)
    with contextlib.suppress(RuntimeError):  # a closed loop: nobody left to tell
        loop.call_soon_threadsafe(_settle, future, result, error)


def _awaitable(error: BaseException) -> BaseException:
    """A future refuses a StopIteration (it would end a coroutine's generator);
    a coroutine turns one into a RuntimeError in the same place, so do we."""
    if isinstance(error, StopIteration):
        wrapped = RuntimeError("the work raised StopIteration")
        wrapped.__cause__ = error
        return wrapped
    return error


def _settle(
    future: asyncio.Future[Any], result: object, error: BaseException | None
) -> None:
    if future.cancelled():  # a waiter that left; its work is done all the same
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


_THREADS = _Threads(THREADS)
os.register_at_fork(after_in_child=_THREADS._forget)  # threads do not survive a fork


async def in_thread(work: Callable[[], T]) -> T:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    _THREADS.put((loop, future, contextvars.copy_context(), work))
    return await future
