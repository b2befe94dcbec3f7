"""Prometheus metrics (docs/http-api.md §10) shared by the roles."""

from __future__ import annotations

import functools
from datetime import UTC, datetime

from prometheus_client import Counter, Gauge, Histogram

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
DLQ_EXPIRING = Gauge(
    "club_dlq_expiring",
    "Entries in CLUB_DLQ within a day of its max_age (CLUB_DLQ_RETENTION), by "
    "consumer: the broker drops them unseen unless someone replays or discards.",
    ["consumer"],
)
# The chain's hops, read at each /metrics scrape (entrypoints/ops/status_metrics.py),
# and by each background role for its own hop (entrypoints/runtime/role_metrics.py).
OUTBOX = "outbox"  # the `queue` label of the stored events not yet published
SAGA_DEADLINES = "saga_deadlines"  # ... and of the saga's overdue wake-ups
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
ROLES_ALIVE = Gauge(
    "club_roles_alive",
    "Processes of a role whose heartbeat is younger than three beats (role_beats): "
    "0 is a fact, not a guess. Alert when the notifications worker's is 0.",
    ["kind", "name"],
)

# A person's work by state (application/work_lists.py), read at each scrape.
PURCHASES = Gauge(
    "club_purchases",
    "Purchases waiting in a state a person may have to settle: manual_review, "
    "refund_failed, refund_pending, payment_checking.",
    ["status"],
)
NOTIFICATIONS = Gauge(
    "club_notifications",
    "E-mails in a state that is not done: unknown, failed, dead-lettered, sending.",
    ["state"],
)
EXPORTS = Gauge(
    "club_exports",
    "Roster exports failed, running (stuck, when old) or pending.",
    ["status"],
)
WORK_OLDEST_AGE = Gauge(
    "club_work_oldest_age_seconds",
    "How long the oldest purchase, e-mail or export has been in its state (0: none).",
    ["kind", "state"],
)
MANUAL_REVIEWS_WAITING = Gauge(
    "club_manual_reviews_waiting",
    "Purchases in manual review: nothing moves until a person decides. Alert on > 0.",
)

# Counted where they happen, in the role that does the work: each background role
# serves its own /metrics (entrypoints/runtime/metrics_server.py), the API its own.
EVENTS_PUBLISHED = Counter(
    "club_events_published",
    "Events the relay published and the stream acknowledged: alert when it stays "
    "flat while club_relay_lag_events grows (no relay holds the lease).",
)
RELAY_LEASE_HELD = Gauge(
    "club_relay_lease_held",
    "1 while this relay holds the outbox lease and publishes: alert when the sum "
    "over the relays is not 1 for longer than two leases.",
)
EVENTS_APPLIED = Counter(
    "club_events_applied",
    "Events a consumer applied for the first time (a projector's effects, a "
    "worker's finished job): alert when flat while club_consumer_lag grows.",
    ["consumer"],
)
DUPLICATES_SKIPPED = Counter(
    "club_duplicates_skipped",
    "Redelivered events a consumer found in its inbox and did not apply again: a "
    "rise follows a redelivery storm (ack_wait too short, a crashing role).",
    ["consumer"],
)
RETRIES = Counter(
    "club_retries",
    "Messages handed back for another try, by class: transient (nothing happened; "
    "the database, the broker or the provider was away) or unknown (the outcome or "
    "the cause is unknown: a poison event, a provider that may have acted). Alert "
    "on a sustained unknown rate.",
    ["consumer", "class"],
)
CONSUMER_WAIT = Histogram(
    "club_consumer_wait_seconds",
    "From the stream storing an event to a consumer taking it (first delivery): "
    "alert when the p99 nears the delivery promise.",
    ["consumer"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900),
)
PROVIDER_CALL = Histogram(
    "club_provider_call_seconds",
    "One call to an outside provider, by outcome (ok, transient, unknown, "
    "permanent): alert on the p99 near the client's timeout or on unknown outcomes.",
    ["provider", "outcome"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)


def observe_wait(consumer: str, num_delivered: int, stored_at: datetime | None) -> None:
    """A first delivery's wait since the stream stored it; a redelivery's wait is
    the consumer's own doing (a retry's delay) and would blur the hop's latency."""
    if num_delivered != 1 or stored_at is None:
        return
    waited = (datetime.now(UTC) - stored_at).total_seconds()
    _wait_of(consumer).observe(max(waited, 0.0))


@functools.cache
def _wait_of(consumer: str) -> Histogram:
    """Each consumer's series, found once: `labels()` takes a lock and builds a key
    on every call, and this runs for every message."""
    return CONSUMER_WAIT.labels(consumer=consumer)


def count_retries(consumer: str, kind: str, count: int = 1) -> None:
    """`kind`: transient or unknown (`class` is the label, a Python keyword)."""
    if count:
        RETRIES.labels(consumer=consumer, **{"class": kind}).inc(count)


PROVIDER_CIRCUIT_OPEN = Gauge(
    "club_provider_circuit_open",
    "1 while a provider's shared circuit is open (it failed for everyone): its work "
    "class takes no message and probes it; served by the worker role.",
    ["provider"],
)
PROVIDER_CIRCUIT_OPEN_SECONDS = Gauge(
    "club_provider_circuit_open_seconds",
    "How long the provider's circuit has been open (0 while closed).",
    ["provider"],
)
PROVIDER_PROBES = Counter(
    "club_provider_probes",
    "Probes of a provider whose circuit is open, by outcome (answered, failed).",
    ["provider", "outcome"],
)
