"""Prometheus metrics (CONTRACT §6) shared by the roles."""

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
