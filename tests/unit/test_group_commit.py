"""Group commit: callers for one key that queue behind a save share the next one."""

from __future__ import annotations

import threading
import time

import pytest

from application.errors import ContentionError
from application.group_commit import GroupCommit


def wait_until_queued(group_commit: GroupCommit[int, int], key: str, n: int) -> None:
    """Until `n` callers wait in `key`'s queue (read from inside: no sleep is long
    enough on a busy box, and a short one changes the groups the test checks)."""
    gate = group_commit._gates[key]
    for _ in range(500):
        with gate.cond:
            if len(gate.pending) == n:
                return
        time.sleep(0.01)
    raise AssertionError(f"{len(gate.pending)} queued, not {n}")


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
    wait_until_queued(group_commit, "lesson", 5)  # behind the running save
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


def test_a_stuck_leader_hands_over_and_its_own_group_gives_up() -> None:
    """A leader whose connection went silent never holds the lesson's queue."""
    first_running, go_on = threading.Event(), threading.Event()
    stuck, release = threading.Event(), threading.Event()

    def run(commands):
        if 100 in commands:  # a first, quick group that the next two queue behind
            first_running.set()
            go_on.wait(5)
        if 0 in commands:  # the next group (0 and 2) hangs on a silent connection
            stuck.set()
            release.wait(10)
        return [c * 10 for c in commands]

    group_commit: GroupCommit[int, int] = GroupCommit(
        run, hand_over_after=0.2, wait_at_most=1.0
    )
    outcomes: dict[int, object] = {}

    def call(n: int) -> None:
        try:
            outcomes[n] = group_commit.submit("lesson", n)
        except ContentionError as error:
            outcomes[n] = error

    threads = [threading.Thread(target=call, args=(n,)) for n in (100, 0, 2)]
    threads[0].start()
    assert first_running.wait(5)
    for thread in threads[1:]:
        thread.start()
    wait_until_queued(group_commit, "lesson", 2)  # then they run as one group
    go_on.set()
    assert stuck.wait(5)
    started = time.monotonic()
    assert group_commit.submit("lesson", 1) == 10  # led by a new leader
    assert time.monotonic() - started < 0.9
    # Past wait_at_most the stuck group's follower gives up; its leader runs on.
    for _ in range(50):
        gave_up = [n for n in (0, 2) if isinstance(outcomes.get(n), ContentionError)]
        if gave_up:
            break
        time.sleep(0.1)
    assert len(gave_up) == 1, outcomes  # the follower; the stuck leader still runs
    release.set()
    for thread in threads:
        thread.join(5)
    [leader] = {0, 2} - set(gave_up)
    assert outcomes[leader] == leader * 10
    assert outcomes[100] == 1000


def test_a_caller_queued_behind_a_slow_leader_waits_at_most_its_bound() -> None:
    running, release = threading.Event(), threading.Event()

    def run(commands):
        running.set()
        release.wait(10)
        return list(commands)

    group_commit: GroupCommit[int, int] = GroupCommit(
        run, hand_over_after=10, wait_at_most=0.3
    )
    leader = threading.Thread(target=group_commit.submit, args=("k", 0))
    leader.start()
    assert running.wait(5)
    started = time.monotonic()
    with pytest.raises(ContentionError):
        group_commit.submit("k", 1)
    assert time.monotonic() - started < 2
    release.set()
    leader.join(5)
