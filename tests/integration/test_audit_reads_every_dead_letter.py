"""`club audit` reads every dead letter of a consumer, however fast they arrive."""

from __future__ import annotations

from uuid import uuid4

from adapters.nats.dlq import dead_lettered
from tests.integration.helpers import run, with_js


def test_every_dead_letter_is_read_even_those_pushed_before_the_count(
    migrated,
) -> None:
    """A push consumer delivers at once; messages already in the client's buffer
    are no longer pending when the count is taken. Read many times, each read must
    see all of them (it saw none of the buffered ones before)."""
    _, nats_url = migrated
    consumer = f"audit-{uuid4().hex[:8]}"
    ids = {str(uuid4()) for _ in range(200)}

    async def body(js, _nc) -> list[set[str]]:
        for event_id in ids:
            await js.publish(
                f"club.dlq.{consumer}",
                b"{}",
                headers={"Club-Original-Msg-Id": event_id},
            )
        return [await dead_lettered(js, consumer) for _ in range(20)]

    reads = run(with_js(nats_url, body))
    assert all(read == ids for read in reads), [len(read) for read in reads]
