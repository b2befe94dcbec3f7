"""A controlled DLQ replay: one consumer, a bounded pack, a rate, an audit record.

docs/background.md §36: before a replay the operator checks that the cause is fixed; a
replay goes
in a bounded pack at a bounded rate so that it cannot flood the provider it failed
against, it can be stopped, and it leaves a record of who did what and why. The
record is written first (`running`) and completed at the end (`finished`,
`stopped` or `failed`), with the DLQ sequence numbers it handed back.

A replay can pick entries (ReplayRequest.only: a piece of the reason, the event
type, event ids; kept in `dlq_replay_filters`), and holds back the notifications'
entries first failed longer ago than the e-mail provider keeps an idempotency key:
sent again, one of those might be sent twice. A discard removes entries without
handing them back, audited in `dlq_discards`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from uuid import UUID, uuid4

import sqlalchemy as sa
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from adapters.nats.dlq import (
    dead_lettered,
    dead_letters,
    hand_back,
    remove,
    replay_durable,
)
from adapters.nats.streams import REPLAY_STREAM
from adapters.postgres.tables import dlq_discards, dlq_replay_filters, dlq_replays
from adapters.reasons import one_line
from application.console_reads import (
    DeadLetter,
    DiscardReport,
    DiscardRequest,
    NotReplayableError,
    ReplayReport,
    ReplayRequest,
)


class JetStreamDeadLetters:
    """The DLQ as people run it (application/console_reads.py:DeadLetterQueue).
    `engine` keeps the replays' audit records; without one, the entries can be
    read, not handed back."""

    def __init__(self, js: JetStreamContext, engine: sa.Engine | None = None) -> None:
        self._js = js
        self._engine = engine

    async def entries(
        self, consumer: str | None = None, *, limit: int | None = None
    ) -> list[DeadLetter]:
        found: list[DeadLetter] = []
        async for entry in dead_letters(self._js, consumer):
            found.append(entry)
            if limit is not None and len(found) >= limit:
                break
        return found

    async def event_ids(self, consumer: str) -> set[str]:
        return await dead_lettered(self._js, consumer)

    async def replay(
        self,
        request: ReplayRequest,
        *,
        stop: asyncio.Event | None = None,
        progress: Callable[[DeadLetter], None] = lambda _: None,
    ) -> ReplayReport:
        if self._engine is None:
            msg = "a replay keeps an audit record: it needs the database"
            raise RuntimeError(msg)
        return await replay(
            self._js, self._engine, request, stop=stop, progress=progress
        )

    async def discard(self, request: DiscardRequest) -> DiscardReport:
        if self._engine is None:
            msg = "a discard keeps an audit record: it needs the database"
            raise RuntimeError(msg)
        return await discard(self._js, self._engine, request)


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
    held: list[DeadLetter] = []
    handed: list[int] = []
    outcome = "finished"
    interval = 1.0 / request.rate_per_s
    now = datetime.now(UTC)
    try:
        async for entry in dead_letters(js, request.consumer):
            if len(matched) >= request.batch:
                break
            if stop is not None and stop.is_set():
                outcome = "stopped"
                break
            if not request.only.matches(entry):
                continue
            if request.held_back(entry, now):
                held.append(entry)
                continue
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
            asyncio.to_thread(
                _finish, engine, replay_id, matched, handed, outcome, held=held
            )
        )
    return ReplayReport(
        replay_id=replay_id,
        matched=matched,
        replayed=len(handed),
        outcome=outcome,
        held_back=held,
    )


async def discard(
    js: JetStreamContext, engine: sa.Engine, request: DiscardRequest
) -> DiscardReport:
    """Remove the matching entries from the DLQ, handing nothing back; the audit
    record is written first (`running`) and says at the end which went."""
    discard_id = uuid4()
    await asyncio.to_thread(_begin_discard, engine, discard_id, request)
    matched: list[DeadLetter] = []
    removed: list[DeadLetter] = []
    outcome = "finished"
    try:
        async for entry in dead_letters(js, request.consumer):
            if not (request.everything or request.only.matches(entry)):
                continue
            matched.append(entry)
            if not request.dry_run and await remove(js, entry):
                removed.append(entry)
    except BaseException:
        outcome = "failed"
        raise
    finally:
        await asyncio.shield(
            asyncio.to_thread(
                _finish_discard, engine, discard_id, matched, removed, outcome
            )
        )
    return DiscardReport(discard_id=discard_id, matched=matched, discarded=len(removed))


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
        conn.execute(
            sa.insert(dlq_replay_filters).values(
                replay_id=replay_id,
                filters=request.only.recorded(),
                past_key_lifetime=request.past_key_lifetime,
            )
        )


def _finish(
    engine: sa.Engine,
    replay_id: UUID,
    matched: list[DeadLetter],
    handed: list[int],
    outcome: str,
    *,
    held: list[DeadLetter],
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
        conn.execute(
            sa.update(dlq_replay_filters)
            .where(dlq_replay_filters.c.replay_id == replay_id)
            .values(held_back=len(held), held_back_ids=[e.event_id for e in held])
        )


def _begin_discard(
    engine: sa.Engine, discard_id: UUID, request: DiscardRequest
) -> None:
    with engine.begin() as conn:
        conn.execute(
            sa.insert(dlq_discards).values(
                discard_id=discard_id,
                operator=one_line(request.operator),
                reason=one_line(request.reason),
                consumer=request.consumer,
                dry_run=request.dry_run,
                filters=request.only.recorded() | {"all": request.everything},
                outcome="running",
            )
        )


def _finish_discard(
    engine: sa.Engine,
    discard_id: UUID,
    matched: list[DeadLetter],
    removed: list[DeadLetter],
    outcome: str,
) -> None:
    with engine.begin() as conn:
        conn.execute(
            sa.update(dlq_discards)
            .where(dlq_discards.c.discard_id == discard_id)
            .values(
                matched=len(matched),
                discarded=len(removed),
                event_ids=[e.event_id for e in removed],
                dlq_seqs=[e.dlq_seq for e in removed],
                outcome=outcome,
                finished_at=sa.func.now(),
            )
        )
