"""PostgreSQL: the event store's settings, SQL tables, inbox, idempotency keys."""
