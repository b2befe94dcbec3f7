"""Group commit per key: concurrent callers for one lesson share one save.

When a class is announced everyone enrolls in the same lesson at once, and each save
conflicts on that lesson's version; retrying blindly collapses throughput exactly
then. Instead, the first caller for a lesson becomes the leader and runs, in one go,
every command that queued for that lesson meanwhile — one read of the lesson, one
atomic save — while the others wait for their own outcome. Callers for other lessons
never wait for each other.

Every wait is bounded. A leader stuck past `hand_over_after` (its database
connection went silent) no longer holds the others back: the next waiter leads the
queue in its place, and a second leader is safe because the lesson's version check
lets only one save win. A caller that gets no outcome within `wait_at_most` gives up
with `ContentionError` (the API answers 503; the key recognises a late commit).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from application.errors import ContentionError

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
        self.leader: object | None = None  # a token per leadership
        self.leading_since = 0.0


class GroupCommit(Generic[Command, Result]):
    def __init__(
        self,
        run: Callable[[Sequence[Command]], Sequence[Result | BaseException]],
        *,
        hand_over_after: float = 1.0,
        wait_at_most: float = 5.0,
    ) -> None:
        """`run` handles a group and returns one result or error per command."""
        self._run = run
        self._hand_over_after = hand_over_after
        self._wait_at_most = wait_at_most
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
        give_up_at = time.monotonic() + self._wait_at_most
        with gate.cond:
            gate.pending.append(me)
            while not me.finished:
                now = time.monotonic()
                if now >= give_up_at:
                    if me in gate.pending:
                        gate.pending.remove(me)
                    msg = f"no outcome within {self._wait_at_most:g}s; try again"
                    raise ContentionError(msg)
                queued = me in gate.pending  # else a leader runs my command
                stale_at = gate.leading_since + self._hand_over_after
                if queued and (gate.leader is None or now >= stale_at):
                    self._lead_pending(gate)
                    continue
                until = min(give_up_at, stale_at) if queued else give_up_at
                gate.cond.wait(max(until - now, 0.001))
        if me.error is not None:
            raise me.error
        return me.result  # type: ignore[return-value] # set when error is None

    def _lead_pending(self, gate: _Gate[Command, Result]) -> None:
        """Called holding the gate's lock; runs the queue without it."""
        token = gate.leader = object()
        gate.leading_since = time.monotonic()
        group, gate.pending = gate.pending, []
        gate.cond.release()
        try:
            self._lead(group)
        finally:
            gate.cond.acquire()
            if gate.leader is token:  # not handed over meanwhile
                gate.leader = None
            gate.cond.notify_all()

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
