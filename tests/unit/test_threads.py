"""`in_thread`: a route's blocking work, its answer or its error, on a thread."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading

import pytest

from entrypoints.http.threads import THREADS, in_thread

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")


def test_the_work_s_answer_comes_back_from_another_thread() -> None:
    async def ask() -> tuple[int, str]:
        return await in_thread(lambda: (6 * 7, threading.current_thread().name))

    answer, thread = asyncio.run(ask())
    assert answer == 42
    assert thread.startswith("club-http_")


def test_the_work_s_error_is_raised_to_the_caller() -> None:
    def fail() -> None:
        raise LookupError("no such lesson")

    with pytest.raises(LookupError, match="no such lesson"):
        asyncio.run(in_thread(fail))


def test_a_stop_iteration_arrives_as_a_runtime_error_not_a_hang() -> None:
    """A future refuses a StopIteration: set as it is, the caller would wait
    for ever."""

    def exhausted() -> int:
        return next(iter([]))

    async def ask() -> None:
        await asyncio.wait_for(in_thread(exhausted), 10)

    with pytest.raises(RuntimeError) as raised:
        asyncio.run(ask())
    assert isinstance(raised.value.__cause__, StopIteration)


def test_the_request_s_context_goes_along() -> None:
    async def ask() -> str:
        REQUEST_ID.set("req-7")
        return await in_thread(REQUEST_ID.get)

    assert asyncio.run(ask()) == "req-7"


def test_a_caller_that_left_does_not_stop_the_threads() -> None:
    """A cancelled wait (a server shutting down) is settled by nobody: no error
    in the loop, and the thread that ran its work goes on to the next."""
    release = threading.Event()
    loop_errors: list[dict[str, object]] = []

    async def leave_then_ask() -> str:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, context: loop_errors.append(context))
        waiting = asyncio.ensure_future(in_thread(release.wait))
        await asyncio.sleep(0.01)
        waiting.cancel()
        release.set()
        await asyncio.sleep(0.05)  # its outcome arrives to a cancelled future
        return await in_thread(lambda: "next")

    assert asyncio.run(leave_then_ask()) == "next"
    assert loop_errors == []


def test_as_many_works_as_threads_run_at_once() -> None:
    everyone = threading.Barrier(THREADS, timeout=10)

    async def ask() -> list[int]:
        return list(
            await asyncio.gather(*(in_thread(everyone.wait) for _ in range(THREADS)))
        )

    assert sorted(asyncio.run(ask())) == list(range(THREADS))


def test_an_answer_for_a_closed_loop_is_dropped_quietly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    died: list[BaseException | None] = []
    monkeypatch.setattr(
        threading, "excepthook", lambda hook: died.append(hook.exc_value)
    )
    release = threading.Event()
    answered = threading.Event()
    left: list[asyncio.Future[str]] = []

    def slow() -> str:
        release.wait(10)
        return "late"

    async def leave() -> None:
        left.append(asyncio.ensure_future(in_thread(slow)))
        await asyncio.sleep(0.01)

    asyncio.run(leave())  # the loop closes with the work still running
    release.set()
    # Every thread asked at once: the one that ran `slow` among them.
    everyone = threading.Barrier(THREADS, timeout=10)

    async def ask_all() -> None:
        await asyncio.gather(*(in_thread(everyone.wait) for _ in range(THREADS)))
        answered.set()

    asyncio.run(ask_all())
    assert answered.is_set()
    assert died == []


def test_a_forked_child_hands_off_on_threads_of_its_own() -> None:
    """The parent's threads stay behind in a fork; the child must not queue
    work that no thread will ever take."""
    assert asyncio.run(in_thread(lambda: "parent")) == "parent"  # threads started
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit code
        try:
            answered = asyncio.run(asyncio.wait_for(in_thread(lambda: "child"), 10))
            os._exit(0 if answered == "child" else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
