"""`club dlq replay` as an operator runs it: a bounded pack at a bounded rate, a dry
run that hands nothing back, Ctrl-C that stops cleanly and a next run that resumes
where it stopped — every entry handed back once, to the one consumer that failed it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from uuid import uuid4

import sqlalchemy as sa
from nats.errors import TimeoutError as NatsTimeoutError

from adapters.nats.dlq import (
    dead_letters,
    ensure_replay_consumer,
    hand_back,
    replay_durable,
)
from adapters.nats.replay import ReplayRequest, replay
from adapters.nats.streams import DLQ_STREAM, REPLAY_STREAM
from adapters.postgres.tables import dlq_replays
from tests.integration.helpers import run, with_js
from tests.integration.test_notifications import club

ORIGINAL = "club.events.enrollment.EnrollmentConfirmed"


async def dead_letter_each(js, consumer: str, n: int) -> list[str]:
    """`n` entries as a worker writes them; their event ids, oldest first."""
    await ensure_replay_consumer(js, consumer)
    ids = [str(uuid4()) for _ in range(n)]
    for event_id in ids:
        await js.publish(
            f"club.dlq.{consumer}",
            b'{"type": "EnrollmentConfirmed"}',
            stream=DLQ_STREAM,
            headers={
                "Club-Original-Subject": ORIGINAL,
                "Club-Original-Msg-Id": event_id,
                "Club-Reason": "permanent: provider answered 400",
                "Club-Owner": "team-mail",
            },
        )
    return ids


async def state(js, consumer: str) -> tuple[list[str], list[str]]:
    """(event ids still in the DLQ, event ids handed back to `consumer`)."""
    left = [e.event_id async for e in dead_letters(js, consumer)]
    # A consumer of our own over the replay subject, reading from the start.
    sub = await js.pull_subscribe(f"club.replay.{consumer}.>", stream=REPLAY_STREAM)
    handed = []
    while True:
        try:
            msgs = await sub.fetch(50, timeout=0.5)
        except (NatsTimeoutError, TimeoutError):  # nats-py raises either
            break
        handed += [m.headers["Club-Original-Msg-Id"] for m in msgs]
    await sub.unsubscribe()
    return left, handed


def audit(container, consumer: str) -> list[tuple[bool, int, int, str]]:
    with container.engine.connect() as conn:
        return [
            tuple(row)
            for row in conn.execute(
                sa.select(
                    dlq_replays.c.dry_run,
                    dlq_replays.c.matched,
                    dlq_replays.c.replayed,
                    dlq_replays.c.outcome,
                )
                .where(dlq_replays.c.consumer == consumer)
                .order_by(dlq_replays.c.started_at)
            )
        ]


def test_a_dry_run_a_bounded_pack_a_stop_and_a_resume(migrated, container) -> None:
    _, nats_url = migrated
    consumer = f"rp-{uuid4().hex[:8]}"
    ids = run(with_js(nats_url, lambda js, _nc: dead_letter_each(js, consumer, 25)))

    dry = club(migrated, "dlq", "replay", "--consumer", consumer, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would hand back 25" in dry.stdout
    left, handed = run(with_js(nats_url, lambda js, _nc: state(js, consumer)))
    assert (left, handed) == (ids, [])  # nothing moved

    started = time.monotonic()
    pack = club(
        migrated, "dlq", "replay", "--consumer", consumer,
        "--batch", "10", "--rate", "5", "--reason", "provider fixed",
    )  # fmt: skip
    took = time.monotonic() - started
    assert pack.returncode == 0, pack.stderr
    assert "handed back 10" in pack.stdout
    assert took >= 9 / 5  # ten at five a second: nine intervals at least
    left, handed = run(with_js(nats_url, lambda js, _nc: state(js, consumer)))
    assert (left, handed) == (ids[10:], ids[:10])  # the oldest ten, in order

    stopped = _interrupted_replay(migrated, consumer, after_lines=3)
    assert stopped.returncode == 0, stopped.stderr
    assert "(stopped)" in stopped.stdout
    left, handed = run(with_js(nats_url, lambda js, _nc: state(js, consumer)))
    assert 13 <= len(handed) < 25  # stopped on the way, nothing handed twice
    assert handed + left == ids

    resumed = club(
        migrated, "dlq", "replay", "--consumer", consumer, "--rate", "100",
        "--reason", "provider fixed",
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    left, handed = run(with_js(nats_url, lambda js, _nc: state(js, consumer)))
    assert (left, handed) == ([], ids)  # each once, in order, all of them

    again = club(migrated, "dlq", "replay", "--consumer", consumer, "--reason", "x")
    assert "handed back 0" in again.stdout  # a second replay changes nothing
    assert [row[3] for row in audit(container, consumer)] == [
        "finished", "finished", "stopped", "finished", "finished",
    ]  # fmt: skip
    assert audit(container, consumer)[0][:3] == (True, 25, 0)  # the dry run

    async def pending(js, _nc) -> int:
        info = await js.consumer_info(REPLAY_STREAM, replay_durable(consumer))
        return int(info.num_pending)

    assert run(with_js(nats_url, pending)) == 25  # only its own durable has them


def test_a_consumer_name_is_one_name_not_a_subject_pattern(migrated) -> None:
    for name in (">", "notifications.>", "a b", "*"):
        refused = club(migrated, "dlq", "replay", "--consumer", name, "--reason", "r")
        assert refused.returncode == 2, refused.stdout
        assert "--consumer names one consumer" in refused.stderr
        listed = club(migrated, "dlq", "list", "--consumer", name)
        assert listed.returncode == 2, listed.stdout


def _interrupted_replay(
    migrated, consumer: str, *, after_lines: int
) -> subprocess.CompletedProcess[str]:
    """Ctrl-C once `after_lines` entries were handed back (at 5 a second)."""
    database_url, nats_url = migrated
    env = {
        **os.environ,
        "CLUB_DATABASE_URL": database_url,
        "CLUB_NATS_URL": nats_url,
        "PYTHONUNBUFFERED": "1",
    }
    argv = [sys.executable, "-m", "entrypoints.cli", "dlq", "replay",
            "--consumer", consumer, "--rate", "5", "--reason", "fixed"]  # fmt: skip
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines = []
    assert proc.stdout is not None
    while len(lines) < after_lines:
        line = proc.stdout.readline()
        assert line, "the replay ended before it was interrupted"
        if line.startswith("handed back DLQ #"):
            lines.append(line)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(argv, proc.returncode, "".join(lines) + out, err)


def test_entries_nobody_reads_replays_of_stay_in_the_dlq(migrated) -> None:
    """The relay's own entries (or a consumer named by mistake): handed back, they
    would leave the DLQ for a subject no durable reads."""
    _, nats_url = migrated
    consumer = f"gone-{uuid4().hex[:8]}"

    async def one_entry(js, _nc) -> None:
        await js.publish(
            f"club.dlq.{consumer}",
            b"{}",
            stream=DLQ_STREAM,
            headers={"Club-Original-Subject": ORIGINAL, "Club-Reason": "unmappable"},
        )

    run(with_js(nats_url, one_entry))
    refused = club(migrated, "dlq", "replay", "--consumer", consumer, "--reason", "r")
    assert refused.returncode == 2, refused.stdout
    assert "reads no replays" in refused.stderr
    assert "club relay rewind" in refused.stderr
    left, handed = run(with_js(nats_url, lambda js, _nc: state(js, consumer)))
    assert (len(left), handed) == (1, [])


def test_two_replays_racing_hand_each_entry_back_once(migrated, container) -> None:
    """Two operators replay the same consumer at once: both finish, and each entry
    reaches the consumer once (the second copy is the stream's duplicate)."""
    _, nats_url = migrated
    consumer = f"race-{uuid4().hex[:8]}"

    async def race(js, _nc) -> list[object]:
        ids = await dead_letter_each(js, consumer, 20)
        request = ReplayRequest(
            consumer=consumer, operator="test", reason="race", rate_per_s=200
        )
        reports = await asyncio.gather(
            replay(js, container.engine, request), replay(js, container.engine, request)
        )
        return [ids, reports, await state(js, consumer)]

    ids, reports, (left, handed) = run(with_js(nats_url, race))
    assert [r.outcome for r in reports] == ["finished", "finished"]
    assert sum(r.replayed for r in reports) == 20  # each by the run that moved it
    assert (left, sorted(handed)) == ([], sorted(ids))


def test_an_entry_handed_back_twice_moves_once_wherever_it_stood(migrated) -> None:
    """The race above, made certain: a second hand-back of the same entry finds it
    deleted. JetStream words that two ways (the first sequence: "no message
    found"; a hole inside the stream: "sequence N not found"); both are "done"."""
    _, nats_url = migrated
    consumer = f"twice-{uuid4().hex[:8]}"

    async def twice(js, _nc) -> list[object]:
        ids = await dead_letter_each(js, consumer, 3)
        first, middle, _ = [e async for e in dead_letters(js, consumer)]
        moved = [await hand_back(js, middle), await hand_back(js, middle)]
        moved += [await hand_back(js, first), await hand_back(js, first)]
        return [ids, moved, await state(js, consumer)]

    ids, moved, (left, handed) = run(with_js(nats_url, twice))
    assert moved == [True, False, True, False]
    assert (left, handed) == ([ids[2]], [ids[1], ids[0]])
