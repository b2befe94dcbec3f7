"""Several relays: one publishes, the others wait; a paused owner is fenced off."""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time

import sqlalchemy as sa

from adapters.postgres.tables import relay_leases
from tests.faults.workload import Enroller, expected_event_ids, stream_event_ids
from tests.stack import eventually

LEASE_S = 2.0  # FAST_FAULTS


class PositionWatch(threading.Thread):
    """Samples the shared position; records any step backwards."""

    def __init__(self, engine: sa.Engine) -> None:
        super().__init__(daemon=True)
        self.engine = engine
        self.samples: list[tuple[float, int, int, str]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            with self.engine.connect() as conn:
                row = conn.execute(
                    sa.select(
                        relay_leases.c.position,
                        relay_leases.c.epoch,
                        relay_leases.c.owner,
                    )
                ).first()
            if row is not None:
                self.samples.append(
                    (time.monotonic(), row.position, row.epoch, row.owner)
                )
            time.sleep(0.02)

    def regressions(self) -> list[tuple[int, int]]:
        positions = [s[1] for s in self.samples]
        return [(a, b) for a, b in itertools.pairwise(positions) if b < a]


def owner(engine: sa.Engine) -> tuple[int, int]:
    """(pid, epoch) of the current lease holder, read together."""
    with engine.connect() as conn:
        row = conn.execute(sa.select(relay_leases.c.owner, relay_leases.c.epoch)).one()
    return int(row.owner.split(":")[1]), row.epoch


def pause_the_owner(engine: sa.Engine) -> tuple[int, int]:
    """SIGSTOP the relay that holds the lease, making sure it still held it then."""
    for _ in range(5):
        pid, epoch = owner(engine)
        os.kill(pid, signal.SIGSTOP)
        if owner(engine) == (pid, epoch):
            return pid, epoch
        os.kill(pid, signal.SIGCONT)  # the lease moved meanwhile: pick again
    raise AssertionError("the lease kept moving; cannot pause its holder")


def test_two_relays_and_a_paused_third_never_regress_or_leave_a_gap(
    stack, container, migrated
) -> None:
    engine = container.engine
    stack.stop("relay")
    for name in ("relay-1", "relay-2", "relay-3"):
        stack.start(name, role="relay")
    watch = PositionWatch(engine)
    watch.start()
    try:
        workload = Enroller(stack.base, count=120)
        workload.start()
        eventually(lambda: watch.samples and watch.samples[-1][1] > 0)

        paused, paused_epoch = pause_the_owner(engine)
        stopped_at = time.monotonic()
        try:
            taken_over = eventually(
                lambda: next((s for s in watch.samples if s[2] > paused_epoch), None),
                timeout=20,
            )
            failover = taken_over[0] - stopped_at
            time.sleep(LEASE_S)
        finally:
            os.kill(paused, signal.SIGCONT)  # wakes believing it still owns the lease

        workload.join(60)
        assert workload.error is None
        expected = expected_event_ids(container)
        eventually(lambda: stream_event_ids(migrated[1]) == expected, timeout=30)
    finally:
        watch.stop.set()
        watch.join()

    assert watch.regressions() == []
    assert failover < 2 * LEASE_S, f"failover took {failover:.2f}s"
    published = stream_event_ids(migrated[1])
    assert len(published) == len(set(published)) == len(expected)  # no copy, no gap
    # On waking, the paused owner finds itself fenced instead of moving the position
    # (after a back-off if the server had ended its session mid-transaction).
    log = stack.logs[stack.name_of(paused)]
    try:
        eventually(lambda: "relay.fenced" in log.read_text(), timeout=15)
    except AssertionError as e:  # say what it did instead
        tail = "\n".join(log.read_text().splitlines()[-30:])
        raise AssertionError(f"the woken owner never said relay.fenced:\n{tail}") from e
    for name in ("relay-1", "relay-2", "relay-3"):
        stack.stop(name)
    stack.start("relay")
