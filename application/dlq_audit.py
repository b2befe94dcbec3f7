"""The DLQ's audit trail as the operator's page shows it: each discard (who, why,
how many, which) and each replay that held entries back past the e-mail
provider's key lifetime (which ones, so the operator can check and decide)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs


@attrs.frozen(kw_only=True)
class DiscardRecord:
    discard_id: UUID
    operator: str
    reason: str
    consumer: str
    dry_run: bool
    discarded: int
    event_ids: list[str]
    outcome: str
    started_at: datetime


@attrs.frozen(kw_only=True)
class HeldBackRecord:
    replay_id: UUID
    operator: str
    consumer: str
    held_back: int
    event_ids: list[str]
    started_at: datetime
