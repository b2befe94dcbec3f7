"""Who answers for each consumer's dead letters (the `consumer_owners` table)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from adapters.postgres.tables import consumer_owners

# Named when a consumer has no row: dead letters always say whom to page.
DEFAULT_OWNER = "club-operators"


def owner_of(engine: sa.Engine, consumer: str) -> str:
    with engine.connect() as conn:
        owner = conn.execute(
            sa.select(consumer_owners.c.owner).where(
                consumer_owners.c.consumer == consumer
            )
        ).scalar_one_or_none()
    return owner or DEFAULT_OWNER


def set_owner(engine: sa.Engine, consumer: str, owner: str) -> None:
    stmt = insert(consumer_owners).values(consumer=consumer, owner=owner)
    with engine.begin() as conn:
        conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[consumer_owners.c.consumer],
                set_={"owner": stmt.excluded.owner},
            )
        )
