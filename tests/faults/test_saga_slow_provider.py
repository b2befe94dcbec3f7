"""Two saga processes behind a provider slower than their claim's lease.

Every status lookup takes 4.5 s; the lease is 3 s. Each purchase must be looked up
once per due check, by one process at a time, and reach manual review after exactly
`CLUB_SAGA_MAX_CHECKS` lookups: a claim that lapsed mid-step would let the second
saga look the same purchase up at once and count the check twice.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import httpx
import pytest

from tests.faults.saga_world import World, world_for

__all__ = ["world_for"]

LOOKUP_MS = 4500  # longer than FAST_SAGA's 3 s lease, shorter than the read timeout
MAX_CHECKS = 3


def lookups_of(world: World, purchase_id: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{world.stack.payment_url}/lookups")
    key = f"purchase-{purchase_id}"
    return [x for x in answer.json()["lookups"] if x["key"] == key]


@pytest.mark.timeout(300)  # five processes start, then every call takes 4.5 s
def test_two_sagas_behind_a_slow_provider_count_each_check_once(
    world_for: Any,
) -> None:
    world: World = world_for(
        "club-saga-slow-",
        CLUB_HOLD_SECONDS="1",
        CLUB_SAGA_MAX_CHECKS=str(MAX_CHECKS),
    )
    world.start("api", "relay", "payment")
    # Charges answer `pending` and never settle: only lookups can tell, and they
    # keep answering `pending` until the checks run out.
    world.knobs(latency_ms=LOOKUP_MS, settle_delay_ms=3_600_000)
    world.start("saga-a", "saga-b")
    purchase_ids = [world.purchase(world.lesson()) for _ in range(2)]
    reviews = [world.until(p, "manual_review", timeout=90) for p in purchase_ids]
    time.sleep(LOOKUP_MS / 1000 + 1)  # a lookup still in flight would land by now
    for purchase_id, review in zip(purchase_ids, reviews, strict=True):
        after = world.view(purchase_id)
        assert after["status"] == "manual_review"
        assert after["review_reason"] == (
            f"payment still unsettled after {MAX_CHECKS} checks"
        )
        assert after["checks"] == review["checks"] == MAX_CHECKS
        lookups = sorted(lookups_of(world, purchase_id), key=lambda x: x["started_at"])
        assert len(lookups) == MAX_CHECKS, lookups
        for earlier, later in itertools.pairwise(lookups):
            assert earlier["finished_at"] <= later["started_at"], lookups
