"""Prometheus metrics (docs/http-api.md §10) shared by the roles."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

CONTRACT_CONFLICTS = Counter(
    "club_contract_conflicts",
    "Events seen again under the same event_id with different content.",
    ["consumer"],
)
DEAD_LETTERS = Counter(
    "club_dead_letters",
    "Messages a consumer copied to CLUB_DLQ, by reason.",
    ["consumer", "reason"],
)
POISON_EVENTS = Counter(
    "club_poison_events",
    "Failures applying one event alone (not the connection's): each retry counts; "
    "alert on any increase.",
    ["consumer"],
)
WORK_OVER_AGE = Counter(
    "club_work_over_age",
    "Jobs started past their work class's age limit (they still run): heavy work "
    "waiting behind urgent work for too long.",
    ["work_class"],
)
DLQ_MESSAGES = Gauge(
    "club_dlq_messages",
    "Entries waiting in CLUB_DLQ, by the consumer that gave them up.",
    ["consumer"],
)
DLQ_OLDEST_AGE = Gauge(
    "club_dlq_oldest_age_seconds",
    "Age of the oldest entry waiting in CLUB_DLQ, by consumer: how long an "
    "obligation has waited for its owner.",
    ["consumer"],
)
# The chain's hops, read at each /metrics scrape (entrypoints/status_metrics.py).
QUEUE_LENGTH = Gauge(
    "club_queue_length",
    "Items waiting at a hop: the outbox, each work class, the saga's deadlines.",
    ["queue"],
)
QUEUE_OLDEST_AGE = Gauge(
    "club_queue_oldest_age_seconds",
    "Age of the oldest item waiting at a hop (0 when none waits).",
    ["queue"],
)
CONSUMER_LAG = Gauge(
    "club_consumer_lag",
    "Events a durable consumer has not finished (pending + delivered, not acked).",
    ["consumer"],
)
CONSUMER_LAG_SECONDS = Gauge(
    "club_consumer_lag_seconds",
    "Age of the oldest event a durable consumer has not finished.",
    ["consumer"],
)
RELAY_LAG = Gauge(
    "club_relay_lag_events", "Stored events the relay has not yet published."
)
OUTBOX_OLDEST_AGE = Gauge(
    "club_outbox_oldest_unpublished_age_seconds",
    "Age of the oldest stored event not yet published (0 when none waits).",
)
PROJECTION_POSITION = Gauge(
    "club_projection_position",
    "The CLUB_EVENTS stream sequence a projection has applied up to.",
    ["projection"],
)
DELIVERY_ETA = Gauge(
    "club_delivery_eta_seconds",
    "When a student enrolling now would get the e-mail, from the capacity model "
    "with measured rates (+Inf: the queue never drains).",
    ["queue"],
)
