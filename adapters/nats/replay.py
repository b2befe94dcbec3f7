"""A controlled DLQ replay: one consumer, a bounded pack, a rate, an audit record.

docs/background.md §36: before a replay the operator checks that the cause is fixed; a
replay goes
in a bounded pack at a bounded rate so that it cannot flood the provider it failed
against, it can be stopped, and it leaves a record of who did what and why. The
record is written first (`running`) and completed at the end (`finished`,
`stopped` or `failed`), with the DLQ sequence numbers it handed back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from uuid import UUID, uuid4

import attrs
import sqlalchemy as sa
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from adapters.nats.dlq import (
    DeadLetter,
    check_consumer,
    dead_letters,
    hand_back,
    replay_durable,
)
from adapters.nats.streams import REPLAY_STREAM
from adapters.postgres.tables import dlq_replays
from adapters.reasons import one_line


@attrs.frozen(kw_only=True)
class ReplayRequest:
    consumer: str
    operator: str
    reason: str
    batch: int = 100  # at most this many entries in this run
    rate_per_s: float = 10.0
    dry_run: bool = False

    def __attrs_post_init__(self) -> None:
        check_consumer(self.consumer)
        if not self.reason.strip():
            raise ValueError("say why (--reason): the replay is audited")
        if self.batch < 1:
            raise ValueError("--batch must be at least 1")
        if not 0 < self.rate_per_s <= 10_000:  # noqa: PLR2004
            raise ValueError("--rate must be more than 0 and at most 10000 per second")


@attrs.frozen(kw_only=True)
class ReplayReport:
    replay_id: UUID
    matched: list[DeadLetter]  # what was (or, dry-run, would be) handed back
    replayed: int
    outcome: str


async def replay(
    js: JetStreamContext,
    engine: sa.Engine,
    request: ReplayRequest,
    *,
    stop: asyncio.Event | None = None,
    progress: Callable[[DeadLetter], None] = lambda _: None,
) -> ReplayReport:
    await _check_replayable(js, request.consumer)
    replay_id = uuid4()
    await asyncio.to_thread(_begin, engine, replay_id, request)
    matched: list[DeadLetter] = []
    handed: list[int] = []
    outcome = "finished"
    interval = 1.0 / request.rate_per_s
    try:
        async for entry in dead_letters(js, request.consumer):
            if len(matched) >= request.batch:
                break
            if stop is not None and stop.is_set():
                outcome = "stopped"
                break
            matched.append(entry)
            if request.dry_run:
                continue
            started = time.monotonic()
            if await hand_back(js, entry):  # not a racing replay's already
                handed.append(entry.dlq_seq)
                progress(entry)
            await asyncio.sleep(max(0.0, interval - (time.monotonic() - started)))
    except BaseException:
        outcome = "failed"
        raise
    finally:
        await asyncio.shield(
            asyncio.to_thread(_finish, engine, replay_id, matched, handed, outcome)
        )
    return ReplayReport(
        replay_id=replay_id, matched=matched, replayed=len(handed), outcome=outcome
    )


class NotReplayableError(ValueError):
    """No durable reads what a replay would hand this consumer."""


async def _check_replayable(js: JetStreamContext, consumer: str) -> None:
    """Handed back where nobody reads, an entry would leave the DLQ for nowhere:
    the relay's own entries, say (its fix is `club relay rewind`), or a typo."""
    try:
        await js.consumer_info(REPLAY_STREAM, replay_durable(consumer))
    except NotFoundError:
        msg = (
            f"{consumer!r} reads no replays (no durable {replay_durable(consumer)!r}"
            " on CLUB_REPLAY): nothing was handed back. The relay's entries are"
            " republished by `club relay rewind`"
        )
        raise NotReplayableError(msg) from None


def _begin(engine: sa.Engine, replay_id: UUID, request: ReplayRequest) -> None:
    with engine.begin() as conn:
        conn.execute(
            sa.insert(dlq_replays).values(
                replay_id=replay_id,
                operator=one_line(request.operator),
                reason=one_line(request.reason),
                consumer=request.consumer,
                dry_run=request.dry_run,
                batch=request.batch,
                rate_per_s=request.rate_per_s,
                outcome="running",
            )
        )


def _finish(
    engine: sa.Engine,
    replay_id: UUID,
    matched: list[DeadLetter],
    handed: list[int],
    outcome: str,
) -> None:
    with engine.begin() as conn:
        conn.execute(
            sa.update(dlq_replays)
            .where(dlq_replays.c.replay_id == replay_id)
            .values(
                matched=len(matched),
                replayed=len(handed),
                dlq_seqs=handed,
                outcome=outcome,
                finished_at=sa.func.now(),
            )
        )
