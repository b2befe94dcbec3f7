"""Group commit per key: concurrent callers for one lesson share one save.

When a class is announced everyone enrolls in the same lesson at once, and each save
conflicts on that lesson's version; retrying blindly collapses throughput exactly
then. Instead, the first caller for a lesson becomes the leader and runs, in one go,
every command that queued for that lesson meanwhile — one read of the lesson, one
atomic save — while the others wait for their own outcome. Callers for other lessons
never wait for each other.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

Command = TypeVar("Command")
Result = TypeVar("Result")


class _Waiter(Generic[Command, Result]):
    def __init__(self, command: Command) -> None:
        self.command = command
        self.finished = False
        self.result: Result | None = None
        self.error: BaseException | None = None


class _Gate(Generic[Command, Result]):
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.pending: list[_Waiter[Command, Result]] = []
        self.leading = False


class GroupCommit(Generic[Command, Result]):
    def __init__(
        self,
        run: Callable[[Sequence[Command]], Sequence[Result | BaseException]],
    ) -> None:
        """`run` handles a group and returns one result or error per command."""
        self._run = run
        self._gates: weakref.WeakValueDictionary[Hashable, _Gate[Command, Result]] = (
            weakref.WeakValueDictionary()
        )
        self._lock = threading.Lock()

    def submit(self, key: Hashable, command: Command) -> Result:
        with self._lock:
            gate = self._gates.get(key)
            if gate is None:
                gate = self._gates[key] = _Gate()
        me: _Waiter[Command, Result] = _Waiter(command)
        with gate.cond:
            gate.pending.append(me)
            while not me.finished:
                if gate.leading:
                    gate.cond.wait()
                    continue
                gate.leading = True
                group, gate.pending = gate.pending, []
                gate.cond.release()
                try:
                    self._lead(group)
                finally:
                    gate.cond.acquire()
                    gate.leading = False
                    gate.cond.notify_all()
        if me.error is not None:
            raise me.error
        return me.result  # type: ignore[return-value] # set when error is None

    def _lead(self, group: list[_Waiter[Command, Result]]) -> None:
        try:
            outcomes = self._run([waiter.command for waiter in group])
        except BaseException as error:  # the whole group failed alike
            outcomes = [error] * len(group)
        for waiter, outcome in zip(group, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                waiter.error = outcome
            else:
                waiter.result = outcome
            waiter.finished = True
