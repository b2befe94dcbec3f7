"""Club's own SQL tables beside the event store: keys, inbox, positions, profiles."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB, UUID

metadata = sa.MetaData()
now = sa.text("now()")

# One row per answered Idempotency-Key. A request that saved events writes its row
# in the events' transaction (adapters/postgres/recorder.py), so a racing repeat
# fails on this primary key and replays the answer instead of doubling the effect.
request_answers = sa.Table(
    "request_answers",
    metadata,
    sa.Column("scope", sa.Text, primary_key=True),  # method + route template
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("fingerprint", sa.Text, nullable=False),  # sha256 of path and body
    sa.Column("status_code", sa.Integer, nullable=False),
    sa.Column("body", JSONB, nullable=False),
    sa.Column("headers", JSONB, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), server_default=now),
)

students = sa.Table(
    "students",
    metadata,
    sa.Column("student_id", sa.Text, primary_key=True),
    sa.Column("email", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), server_default=now),
)

# The relays' shared position in the notification log, and who may move it.
# Acquiring bumps `epoch`; the position moves only `WHERE epoch = mine`, so a relay
# that was paused past its lease (and lost it) can never move it again (fencing).
relay_leases = sa.Table(
    "relay_leases",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("owner", sa.Text, nullable=False),
    sa.Column("epoch", sa.BigInteger, nullable=False),
    sa.Column("lease_until", sa.DateTime(timezone=True), nullable=False),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), server_default=now),
)

# One row per event a consumer has applied: the duplicate check and its effect
# commit in one transaction. The body hash tells a redelivery from a conflict.
inbox = sa.Table(
    "inbox",
    metadata,
    sa.Column("consumer", sa.Text, primary_key=True),
    sa.Column("event_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("body_sha256", sa.LargeBinary, nullable=False),
    sa.Column("stream_seq", sa.BigInteger, nullable=False),
    sa.Column("applied_at", sa.DateTime(timezone=True), server_default=now),
)

consumer_positions = sa.Table(
    "consumer_positions",
    metadata,
    sa.Column("consumer", sa.Text, primary_key=True),
    sa.Column("stream_seq", sa.BigInteger, nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), server_default=now),
)

# When a consumer first failed a message it later dead-lettered (its first NAK for
# a retry): the dead letter's Club-First-Failed-At. One row per message as JetStream
# holds it; `stored_at` tells apart a recreated stream's reuse of a sequence.
# `poison_failures` counts the failures the poison bound counts: JetStream's
# delivery count also holds every redelivery of an outage waited out.
first_failures = sa.Table(
    "first_failures",
    metadata,
    sa.Column("consumer", sa.Text, primary_key=True),
    sa.Column("stream", sa.Text, primary_key=True),
    sa.Column("stream_seq", sa.BigInteger, primary_key=True),
    sa.Column("stored_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("first_failed_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("poison_failures", sa.Integer, nullable=False, server_default="0"),
)

# Stored events a projection rebuild could not apply (poison): skipped, never
# silently, and never a rebuild stopped dead.
rebuild_skips = sa.Table(
    "rebuild_skips",
    metadata,
    sa.Column("projection", sa.Text, primary_key=True),
    sa.Column("notification_id", sa.BigInteger, primary_key=True),
    sa.Column("event_id", UUID(as_uuid=True)),  # None: it could not even be mapped
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("skipped_at", sa.DateTime(timezone=True), server_default=now),
)

# One row per notification an event asks for (keyed by that event's id): its state
# is what GET /enrollments/{id} shows, and `sending`/`unknown` tell a redelivery to
# look the provider up before any resend.
notifications = sa.Table(
    "notifications",
    metadata,
    sa.Column("event_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("kind", sa.Text, nullable=False),  # confirmation | cancellation
    sa.Column("enrollment_id", UUID(as_uuid=True), nullable=False, index=True),
    sa.Column("student_id", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("last_error", sa.Text),
    sa.Column("provider_id", sa.Text),
    sa.Column("created_at", sa.DateTime(timezone=True), server_default=now),
    sa.Column("updated_at", sa.DateTime(timezone=True), server_default=now),
    sa.Column("sent_at", sa.DateTime(timezone=True)),
)

# Every `club dlq replay` (CLI or /ops): who, why, what, how many — an audit trail.
dlq_replays = sa.Table(
    "dlq_replays",
    metadata,
    sa.Column("replay_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("operator", sa.Text, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("consumer", sa.Text, nullable=False),
    sa.Column("dry_run", sa.Boolean, nullable=False),
    sa.Column("batch", sa.Integer, nullable=False),
    sa.Column("rate_per_s", sa.Float, nullable=False),
    sa.Column("matched", sa.Integer, nullable=False, server_default="0"),
    sa.Column("replayed", sa.Integer, nullable=False, server_default="0"),
    sa.Column("dlq_seqs", JSONB, nullable=False, server_default="[]"),
    sa.Column("outcome", sa.Text, nullable=False),  # running|finished|stopped|failed
    sa.Column("started_at", sa.DateTime(timezone=True), server_default=now),
    sa.Column("finished_at", sa.DateTime(timezone=True)),
)

# When each purchase's saga must wake next (decisions/2026-11-30-saga-deadlines.md).
# `due_at` NULL: nothing is due (settled, or a person decides). A claim takes due
# rows with SKIP LOCKED and holds them until `claimed_until`; `claim_token` fences
# the release, and `nudges` counts wake-ups asked for since, so a nudge that lands
# while a saga process works on the purchase is not overwritten by its release.
saga_deadlines = sa.Table(
    "saga_deadlines",
    metadata,
    sa.Column("purchase_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("due_at", sa.DateTime(timezone=True), index=True),
    sa.Column("nudges", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("claimed_until", sa.DateTime(timezone=True)),
    sa.Column("claimed_by", sa.Text),
    sa.Column("claim_token", UUID(as_uuid=True)),
    sa.Column("last_error", sa.Text),
)

# How far the saga processes have read the notification log for purchase events
# (each one wakes its purchase); a single row, moved only forward.
saga_positions = sa.Table(
    "saga_positions",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("position", sa.BigInteger, nullable=False),
)

# Each provider webhook event id accepted once: a redelivery finds its row.
payment_webhooks = sa.Table(
    "payment_webhooks",
    metadata,
    sa.Column("event_id", sa.Text, primary_key=True),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("purchase_id", UUID(as_uuid=True)),  # None: names no purchase of ours
    sa.Column("outcome", sa.Text, nullable=False),
    sa.Column("received_at", sa.DateTime(timezone=True), server_default=now),
)

# Every webhook refused (bad signature, unreadable body): who sent what, and why.
refused_webhooks = sa.Table(
    "refused_webhooks",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("remote", sa.Text),
    sa.Column("body_sha256", sa.Text, nullable=False),
    sa.Column("body_bytes", sa.Integer, nullable=False),
    sa.Column("received_at", sa.DateTime(timezone=True), server_default=now),
)

# Retention (adapters/postgres/retention.py) deletes the oldest rows in batches, and
# `club status` reads each table's oldest row: both walk these indexes.
sa.Index("inbox_applied_at", inbox.c.applied_at)
sa.Index("request_answers_created_at", request_answers.c.created_at)
# The work lists and their gauges read the notifications not yet sent, by state and
# oldest first; the sent ones (nearly all) stay out of this index.
sa.Index(
    "notifications_waiting",
    notifications.c.state,
    notifications.c.updated_at,
    postgresql_where=notifications.c.state != "sent",
)

# How far each consumer's inbox was trimmed: events that occurred before
# `occurred_before` may have lost their rows, so a delivery of one that finds no row
# is refused as already handled, never applied again (a rebuild reapplies them).
inbox_horizons = sa.Table(
    "inbox_horizons",
    metadata,
    sa.Column("consumer", sa.Text, primary_key=True),
    sa.Column("occurred_before", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), server_default=now),
)

# Each running role's heartbeat (adapters/postgres/role_beats.py): a row per process,
# stamped with the database's clock every few seconds; a clean stop removes it. A
# role is alive while its row was stamped within a few beats: `club status` and
# /ops list those, so "no worker is running" is read, not guessed.
role_beats = sa.Table(
    "role_beats",
    metadata,
    sa.Column("instance", sa.Text, primary_key=True),  # host:pid:random
    sa.Column("kind", sa.Text, nullable=False),  # api | relay | projector | ...
    sa.Column("name", sa.Text, nullable=False),  # the projection or work class
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("beat_at", sa.DateTime(timezone=True), nullable=False),
)

# What a `club dlq replay` was told to pick (a row per replay in `dlq_replays`,
# added beside it so an existing database gains it at `club migrate`): its filters,
# and the entries it held back past the e-mail provider's key lifetime.
dlq_replay_filters = sa.Table(
    "dlq_replay_filters",
    metadata,
    sa.Column(
        "replay_id",
        UUID(as_uuid=True),
        sa.ForeignKey("dlq_replays.replay_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("filters", JSONB, nullable=False),  # {"because", "type", "ids"}
    sa.Column("past_key_lifetime", sa.Boolean, nullable=False),
    sa.Column("held_back", sa.Integer, nullable=False, server_default="0"),
    sa.Column("held_back_ids", JSONB, nullable=False, server_default="[]"),
)

# Every `club dlq discard`: entries removed from the DLQ without being handed back.
# Who (the OS user, or "ops-page"), why, which (the filters or all), how many and
# which event ids; a dry run leaves a row too, with nothing discarded.
dlq_discards = sa.Table(
    "dlq_discards",
    metadata,
    sa.Column("discard_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("operator", sa.Text, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("consumer", sa.Text, nullable=False),
    sa.Column("dry_run", sa.Boolean, nullable=False),
    sa.Column("filters", JSONB, nullable=False),  # {"because", "type", "ids", "all"}
    sa.Column("matched", sa.Integer, nullable=False, server_default="0"),
    sa.Column("discarded", sa.Integer, nullable=False, server_default="0"),
    sa.Column("event_ids", JSONB, nullable=False, server_default="[]"),
    sa.Column("dlq_seqs", JSONB, nullable=False, server_default="[]"),
    sa.Column("outcome", sa.Text, nullable=False),  # running|finished|failed
    sa.Column("started_at", sa.DateTime(timezone=True), server_default=now),
    sa.Column("finished_at", sa.DateTime(timezone=True)),
)

# One row per provider: its circuit, shared by every worker process and changed
# only by compare-and-set on `version` (adapters/postgres/provider_circuits.py).
provider_circuits = sa.Table(
    "provider_circuits",
    metadata,
    sa.Column("provider", sa.Text, primary_key=True),
    sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
    sa.Column("opened_at", sa.DateTime(timezone=True)),  # NULL: closed
    sa.Column("next_probe_at", sa.DateTime(timezone=True)),
    sa.Column("last_error", sa.Text),
    sa.Column("version", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("updated_at", sa.DateTime(timezone=True), server_default=now),
)
