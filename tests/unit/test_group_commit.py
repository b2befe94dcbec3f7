"""Group commit: callers for one key that queue behind a save share the next one."""

from __future__ import annotations

import threading
import time

import pytest

from application.group_commit import GroupCommit


def test_callers_waiting_behind_a_save_are_run_as_one_group() -> None:
    groups: list[list[int]] = []
    first_running, release = threading.Event(), threading.Event()

    def run(commands):
        groups.append(list(commands))
        if len(groups) == 1:
            first_running.set()
            release.wait(5)
        return [c * 10 for c in commands]

    group_commit: GroupCommit[int, int] = GroupCommit(run)
    results: dict[int, int] = {}

    def call(n: int) -> None:
        results[n] = group_commit.submit("lesson", n)

    leader = threading.Thread(target=call, args=(0,))
    leader.start()
    first_running.wait(5)
    followers = [threading.Thread(target=call, args=(n,)) for n in range(1, 6)]
    for thread in followers:
        thread.start()
    time.sleep(0.2)  # let all five queue behind the running save
    release.set()
    for thread in [leader, *followers]:
        thread.join(5)
    assert groups[0] == [0]
    assert sorted(groups[1]) == [1, 2, 3, 4, 5]  # one save for the whole burst
    assert results == {n: n * 10 for n in range(6)}


def test_each_caller_gets_its_own_error() -> None:
    group_commit: GroupCommit[int, int] = GroupCommit(
        lambda cmds: [ValueError(c) if c % 2 else c for c in cmds]
    )
    assert group_commit.submit("k", 2) == 2
    with pytest.raises(ValueError, match="3"):
        group_commit.submit("k", 3)


def test_a_failing_group_fails_every_caller_and_the_next_group_runs() -> None:
    calls = []

    def run(commands):
        calls.append(commands)
        if len(calls) == 1:
            raise RuntimeError("database gone")
        return list(commands)

    group_commit: GroupCommit[int, int] = GroupCommit(run)
    with pytest.raises(RuntimeError):
        group_commit.submit("k", 1)
    assert group_commit.submit("k", 2) == 2
