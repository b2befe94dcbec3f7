"""`club dlq replay` picks entries (`--because`, `--type`, `--id`), `club dlq
discard` removes them without handing them back, and a notification past the
e-mail provider's key lifetime is held back, not resent blind — each audited."""

from __future__ import annotations

import dataclasses
import getpass
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import sqlalchemy as sa

from adapters.nats.dlq import dead_letters, ensure_replay_consumer
from adapters.nats.dlq_metrics import dlq_hops
from adapters.nats.streams import DLQ_STREAM
from adapters.postgres.tables import dlq_discards, dlq_replay_filters, dlq_replays
from application.console_reads import DlqHop
from tests.integration.helpers import run, with_js
from tests.integration.test_dlq_replay_cli import state
from tests.integration.test_notifications import club

CONFIRMED = "club.events.enrollment.EnrollmentConfirmed"
CANCELLED = "club.events.lesson.LessonCancelled"
REFUSED = "permanent: provider answered 400"
TIMEOUT = "transient: provider timed out"


async def write(
    js, consumer: str, letters: list[tuple[str, str, datetime | None]]
) -> list[str]:
    """One entry per (original subject, reason, first failed at); their ids."""
    await ensure_replay_consumer(js, consumer)
    ids = []
    for subject, reason, first_failed in letters:
        event_id = str(uuid4())
        headers = {
            "Club-Original-Subject": subject,
            "Club-Original-Msg-Id": event_id,
            "Club-Reason": reason,
            "Club-Owner": "team-mail",
        }
        if first_failed is not None:
            headers["Club-First-Failed-At"] = first_failed.isoformat()
        await js.publish(
            f"club.dlq.{consumer}", b"{}", stream=DLQ_STREAM, headers=headers
        )
        ids.append(event_id)
    return ids


def replays(container, consumer: str) -> list[dict[str, object]]:
    """Each replay's audit record with its filters, oldest first."""
    with container.engine.connect() as conn:
        rows = conn.execute(
            sa.select(
                dlq_replays.c.dry_run,
                dlq_replays.c.reason,
                dlq_replays.c.matched,
                dlq_replays.c.replayed,
                dlq_replay_filters.c.filters,
                dlq_replay_filters.c.past_key_lifetime,
                dlq_replay_filters.c.held_back,
                dlq_replay_filters.c.held_back_ids,
            )
            .join(dlq_replay_filters)
            .where(dlq_replays.c.consumer == consumer)
            .order_by(dlq_replays.c.started_at)
        )
        return [dict(row._mapping) for row in rows]


def discards(container, consumer: str) -> list[dict[str, object]]:
    with container.engine.connect() as conn:
        rows = conn.execute(
            sa.select(dlq_discards)
            .where(dlq_discards.c.consumer == consumer)
            .order_by(dlq_discards.c.started_at)
        )
        return [dict(row._mapping) for row in rows]


def test_a_replay_hands_back_only_the_entries_it_was_told(migrated, container) -> None:
    _, nats_url = migrated
    consumer = f"pick-{uuid4().hex[:8]}"
    letters = [
        (CONFIRMED, REFUSED, None),
        (CONFIRMED, TIMEOUT, None),
        (CANCELLED, REFUSED, None),
        (CANCELLED, TIMEOUT, None),
        (CANCELLED, TIMEOUT, None),
    ]
    ids = run(with_js(nats_url, lambda js, _nc: write(js, consumer, letters)))
    a, b, c, d, e = ids

    dry = club(
        migrated, "dlq", "replay", "--consumer", consumer, "--dry-run",
        "--because", "ANSWERED 400",
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "would hand back 2" in dry.stdout
    assert a in dry.stdout
    assert c in dry.stdout
    assert b not in dry.stdout
    assert run(with_js(nats_url, lambda js, _nc: state(js, consumer))) == (ids, [])

    by_type = club(
        migrated, "dlq", "replay", "--consumer", consumer, "--type", "LessonCancelled",
        "--because", "timed out", "--rate", "100", "--reason", "timeouts fixed",
    )  # fmt: skip
    assert by_type.returncode == 0, by_type.stderr
    assert "handed back 2" in by_type.stdout
    left, handed = run(with_js(nats_url, lambda js, _nc: state(js, consumer)))
    assert (left, handed) == ([a, b, c], [d, e])

    by_id = club(
        migrated, "dlq", "replay", "--consumer", consumer, "--id", a, "--id", b,
        "--rate", "100", "--reason", "checked these two",
    )  # fmt: skip
    assert by_id.returncode == 0, by_id.stderr
    assert "handed back 2" in by_id.stdout
    left, handed = run(with_js(nats_url, lambda js, _nc: state(js, consumer)))
    assert (left, handed) == ([c], [d, e, a, b])

    dry_run, typed, named = replays(container, consumer)
    assert (dry_run["dry_run"], dry_run["matched"], dry_run["replayed"]) == (
        True, 2, 0,
    )  # fmt: skip
    assert dry_run["filters"] == {"because": "ANSWERED 400", "type": "", "ids": []}
    assert typed["filters"] == {
        "because": "timed out", "type": "LessonCancelled", "ids": [],
    }  # fmt: skip
    assert (typed["reason"], typed["replayed"]) == ("timeouts fixed", 2)
    assert named["filters"] == {"because": "", "type": "", "ids": sorted([a, b])}
    assert named["past_key_lifetime"] is False


def test_a_discard_removes_without_handing_back_and_is_audited(
    migrated, container
) -> None:
    _, nats_url = migrated
    consumer = f"drop-{uuid4().hex[:8]}"
    letters = [(CONFIRMED, REFUSED, None)] * 2 + [(CANCELLED, TIMEOUT, None)]
    ids = run(with_js(nats_url, lambda js, _nc: write(js, consumer, letters)))

    refused = club(migrated, "dlq", "discard", "--consumer", consumer, "--all")
    assert refused.returncode == 2, refused.stdout
    assert "say why (--reason TEXT)" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert discards(container, consumer) == []  # refused before anything

    dry = club(
        migrated, "dlq", "discard", "--consumer", consumer, "--because", "400",
        "--reason", "spam addresses", "--dry-run",
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "would discard 2" in dry.stdout
    assert run(with_js(nats_url, lambda js, _nc: state(js, consumer))) == (ids, [])

    one = club(
        migrated, "dlq", "discard", "--consumer", consumer, "--id", ids[1],
        "--reason", "the student asked us not to write",
    )  # fmt: skip
    assert one.returncode == 0, one.stderr
    assert "discarded 1" in one.stdout
    assert run(with_js(nats_url, lambda js, _nc: state(js, consumer))) == (
        [ids[0], ids[2]], [],
    )  # fmt: skip

    rest = club(
        migrated, "dlq", "discard", "--consumer", consumer, "--all",
        "--reason", "obsolete",
    )  # fmt: skip
    assert rest.returncode == 0, rest.stderr
    assert "discarded 2" in rest.stdout
    assert run(with_js(nats_url, lambda js, _nc: state(js, consumer))) == ([], [])

    dry_row, one_row, rest_row = discards(container, consumer)
    assert (dry_row["dry_run"], dry_row["matched"], dry_row["discarded"]) == (
        True, 2, 0,
    )  # fmt: skip
    assert one_row["operator"] == getpass.getuser()
    assert one_row["reason"] == "the student asked us not to write"
    assert (one_row["discarded"], one_row["event_ids"]) == (1, [ids[1]])
    assert one_row["filters"] == {
        "because": "", "type": "", "ids": [ids[1]], "all": False,
    }  # fmt: skip
    assert one_row["outcome"] == "finished"
    assert one_row["finished_at"] is not None
    assert rest_row["event_ids"] == [ids[0], ids[2]]
    assert rest_row["filters"]["all"] is True


def test_a_notification_past_the_key_lifetime_is_held_back(migrated, container) -> None:
    """The provider forgets an idempotency key after CLUB_EMAIL_KEY_LIFETIME (24 h):
    an entry first failed before then may have gone out, and would go out twice."""
    _, nats_url = migrated
    consumer = "notifications"
    marker = f"permanent: provider answered 503 ({uuid4().hex[:8]})"
    now = datetime.now(UTC)
    letters = [
        (CONFIRMED, marker, now - timedelta(hours=25)),
        (CONFIRMED, marker, now - timedelta(minutes=5)),
    ]
    old, fresh = run(with_js(nats_url, lambda js, _nc: write(js, consumer, letters)))

    replayed = club(
        migrated, "dlq", "replay", "--consumer", consumer, "--because", marker,
        "--rate", "100", "--reason", "provider is back",
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    out = replayed.stdout
    assert "handed back 1" in out
    assert "held back 1 of notifications's dead letters" in out
    assert "more than 1d ago (CLUB_EMAIL_KEY_LIFETIME)" in out
    assert old in out
    assert "provider's dashboard" in out
    assert "--id EVENT_ID --past-key-lifetime" in out
    assert "club dlq discard --consumer notifications" in out

    async def mine(js, _nc) -> tuple[list[str], list[str]]:
        left, handed = await state(js, consumer)
        return [i for i in left if i in (old, fresh)], handed

    assert run(with_js(nats_url, mine)) == ([old], [fresh])

    anyway = club(
        migrated, "dlq", "replay", "--consumer", consumer, "--id", old,
        "--past-key-lifetime", "--reason", "not on the provider's dashboard",
    )  # fmt: skip
    assert anyway.returncode == 0, anyway.stderr
    assert "handed back 1" in anyway.stdout
    assert "held back" not in anyway.stdout
    assert run(with_js(nats_url, mine)) == ([], [fresh, old])

    first, second = replays(container, consumer)[-2:]
    assert (first["held_back"], first["held_back_ids"]) == (1, [old])
    assert first["replayed"] == 1
    assert (second["past_key_lifetime"], second["held_back"]) == (True, 0)
    left = run(
        with_js(nats_url, lambda js, _nc: _ids(js, consumer))
    )  # nothing of ours stays behind
    assert old not in left
    assert fresh not in left


async def _ids(js, consumer: str) -> list[str]:
    return [e.event_id async for e in dead_letters(js, consumer)]


def test_the_dlq_gauges_count_the_entries_within_a_day_of_expiring(migrated) -> None:
    """club_dlq_expiring: the broker drops an entry at the stream's max_age
    (CLUB_DLQ_RETENTION); a day before, the entries are counted by consumer."""
    _, nats_url = migrated
    consumer = f"exp-{uuid4().hex[:8]}"

    async def hops(js, _nc, max_age: float) -> DlqHop:
        config = (await js.stream_info(DLQ_STREAM)).config
        kept = config.max_age
        await js.update_stream(dataclasses.replace(config, max_age=max_age))
        try:
            found = {h.consumer: h for h in await dlq_hops(js)}
        finally:
            await js.update_stream(dataclasses.replace(config, max_age=kept))
        return found[consumer]

    run(
        with_js(
            nats_url,
            lambda js, _nc: write(js, consumer, [(CONFIRMED, REFUSED, None)] * 3),
        )
    )
    week = run(with_js(nats_url, lambda js, nc: hops(js, nc, 7 * 86_400)))
    assert (week.messages, week.expiring) == (3, 0)
    hour = run(with_js(nats_url, lambda js, nc: hops(js, nc, 3_600)))
    assert (hour.messages, hour.expiring) == (3, 3)
