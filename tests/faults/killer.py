"""SIGKILL at random moments: the fault the random-kill tests share."""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence

from tests.stack import Stack


class Killer(threading.Thread):
    """SIGKILLs one of `names` every `pause` seconds (a uniform draw) and starts it
    again, as `role` when the names are not roles themselves. `stop` ends it."""

    def __init__(
        self,
        stack: Stack,
        names: Sequence[str],
        pause: tuple[float, float],
        role: str | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self.stack, self.names, self.pause, self.role = stack, names, pause, role
        self.kills = 0
        self.stop = threading.Event()
        self.rng = random.Random(0xC1B)

    def run(self) -> None:
        while not self.stop.wait(self.rng.uniform(*self.pause)):
            name = self.rng.choice(self.names)
            self.stack.kill(name)
            self.kills += 1
            self.stack.start(name, role=self.role)
