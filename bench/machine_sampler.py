"""What the machine did beside a benchmark round: the CPU the hypervisor gave to
other guests (steal), how long the disk took to make a small write durable, and
the CPU processes outside the benchmark's own tree used (the machine's other
daemons), so a slow round can be laid beside them.

Steal is time a virtual CPU was ready to run and the host ran someone else; a slow
flush holds every durable commit waiting on it. To the processes inside, both are
pauses that no profile of theirs shows.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import psutil

INTERVAL_S = 0.05
PROBE_BYTES = b"\0" * 8192  # one page, as a WAL flush writes at least


@attrs.frozen
class Tick:
    at: float  # unix seconds
    total: float  # CPU seconds of every core since the last tick
    busy: float  # of which not idle (steal included)
    steal: float


@attrs.frozen
class Share:
    busy: float  # of all cores' time, 0..1
    steal: float
    slowest_flush: float  # seconds, of the probe's flushes begun in the window


class MachineSampler:
    """System CPU times every INTERVAL_S on a thread of its own while running; given
    a `probe_dir` on the disk the database flushes to, also a page written and
    flushed (fdatasync) there every INTERVAL_S on another (a diagnostic: its
    flushes queue beside the database's own)."""

    def __init__(self, probe_dir: Path | None = None) -> None:
        self.ticks: list[Tick] = []
        self.flushes: list[tuple[float, float]] = []  # (begun, seconds)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._sample, daemon=True)]
        if probe_dir is not None:
            self._probe = probe_dir / "flush-probe"
            self._threads.append(threading.Thread(target=self._flush, daemon=True))

    def _flush(self) -> None:
        fd = os.open(self._probe, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while not self._stop.wait(INTERVAL_S):
                os.pwrite(fd, PROBE_BYTES, 0)
                begun = time.time()
                os.fdatasync(fd)
                self.flushes.append((begun, time.time() - begun))
        finally:
            os.close(fd)
            self._probe.unlink(missing_ok=True)

    def _sample(self) -> None:
        last = psutil.cpu_times()
        while not self._stop.wait(INTERVAL_S):
            now = psutil.cpu_times()
            total, busy, steal = cpu_between(last, now)
            if total > 0:
                self.ticks.append(Tick(time.time(), total, busy, steal))
            last = now

    def share(self, start: float, end: float) -> Share:
        """The busy and stolen share of the ticks that ended within [start, end]."""
        ticks = [t for t in self.ticks if start <= t.at <= end]
        total = sum(t.total for t in ticks)
        slowest = max((s for b, s in self.flushes if start <= b <= end), default=0.0)
        if not total:
            return Share(0.0, 0.0, slowest)
        return Share(
            sum(t.busy for t in ticks) / total,
            sum(t.steal for t in ticks) / total,
            slowest,
        )

    def flush_p99(self, start: float, end: float) -> float:
        times = sorted(s for b, s in self.flushes if start <= b <= end)
        return times[int(len(times) * 0.99)] if times else 0.0

    @contextmanager
    def running(self) -> Iterator[MachineSampler]:
        for thread in self._threads:
            thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            for thread in self._threads:
                thread.join()


def cpu_between(before: Any, after: Any) -> tuple[float, float, float]:
    """CPU seconds of every core between two `psutil.cpu_times()`: in all, not idle
    (steal included), stolen."""
    total = sum(after) - sum(before)
    idle = (after.idle + after.iowait) - (before.idle + before.iowait)
    return total, total - idle, after.steal - before.steal


def outside_cpu() -> dict[int, tuple[str, float]]:
    """CPU seconds so far of each process outside this one's tree, by pid."""
    me = psutil.Process()
    ours = {me.pid} | {p.pid for p in me.children(recursive=True)}
    seen = {}
    for process in psutil.process_iter(["name", "cpu_times"]):
        times = process.info["cpu_times"]
        if process.pid not in ours and times is not None:
            seen[process.pid] = (process.info["name"], times.user + times.system)
    return seen


def outside_used(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]
) -> dict[str, float]:
    """CPU seconds each outside process (by name, summed) used in between."""
    used: dict[str, float] = {}
    for pid, (name, seconds) in after.items():
        if pid in before:
            used[name] = used.get(name, 0.0) + seconds - before[pid][1]
    return {name: s for name, s in sorted(used.items(), key=lambda i: -i[1]) if s}
