"""The last hour of each hop's oldest age, kept in the API process for `/ops/`'s charts.

A count alone hides how long the oldest item has waited (docs/background.md §33);
a chart of the age shows whether a backlog is growing, steady or draining. The
samples live in memory, bounded: a restarted API starts a fresh hour, and with
several API processes each keeps its own (what an operator needs is the trend,
not an archive — the archive is Prometheus's, from `/metrics`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping

import attrs

WINDOW_S = 3600.0
MIN_SPACING_S = 2.0  # page refreshes and the sampler together: one sample per 2 s


@attrs.frozen
class Sample:
    at: float  # time.time()
    ages: Mapping[str, float]  # hop -> oldest age in seconds (0: nothing waits)


class OpsHistory:
    """Samples of (time, hop -> oldest age), none older than `window_s`, at most
    one per `min_spacing_s`: at most window/spacing samples, whoever records."""

    def __init__(
        self,
        *,
        window_s: float = WINDOW_S,
        min_spacing_s: float = MIN_SPACING_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.window_s = window_s
        self.min_spacing_s = min_spacing_s
        self._clock = clock
        self._samples: deque[Sample] = deque(maxlen=int(window_s / min_spacing_s) + 1)

    def record(self, ages: Mapping[str, float | None]) -> bool:
        """Keep a sample now; False when the last one is too recent to add one."""
        now = self._clock()
        if self._samples and now - self._samples[-1].at < self.min_spacing_s:
            return False
        self._samples.append(
            Sample(now, {hop: age or 0.0 for hop, age in ages.items()})
        )
        self._drop_older_than_the_window(now)
        return True

    def series(self, hop: str) -> list[tuple[float, float]]:
        """(seconds ago, age) of one hop, oldest first; a hop missing from a sample
        (a consumer that did not exist yet) is left out, not shown as 0."""
        now = self._clock()
        self._drop_older_than_the_window(now)
        return [(now - s.at, s.ages[hop]) for s in self._samples if hop in s.ages]

    def __len__(self) -> int:
        return len(self._samples)

    def _drop_older_than_the_window(self, now: float) -> None:
        while self._samples and now - self._samples[0].at > self.window_s:
            self._samples.popleft()
