"""A crashed role's pause grows with crashes in a row, not with crashes ever."""

from __future__ import annotations

import subprocess
import time

from entrypoints.runtime.bootstrap import Role
from entrypoints.runtime.supervisor import STABLE_S, Child, _supervise


def crashed(role: Role, *, ran_for: float, restarts: int) -> Child:
    proc = subprocess.Popen(["false"])
    proc.wait()
    child = Child(role, env={}, proc=proc, restarts=restarts)
    child.started_at = time.monotonic() - ran_for
    return child


def test_a_role_that_keeps_crashing_waits_longer_each_time() -> None:
    child = crashed(Role("relay"), ran_for=1, restarts=3)
    _supervise(child)
    assert child.restart_at is not None
    assert child.restart_at - time.monotonic() > 3.5  # 0.5 s x 2**3


def test_a_role_that_ran_long_before_crashing_restarts_soon() -> None:
    child = crashed(Role("relay"), ran_for=STABLE_S + 1, restarts=5)
    _supervise(child)
    assert child.restart_at is not None
    assert child.restart_at - time.monotonic() <= 0.5
