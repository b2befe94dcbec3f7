"""Identifiers derived, not drawn: the same input always names the same thing."""

from uuid import UUID, uuid5

CLUB_NS = UUID("6f1c3f7e-3f3a-5b8e-9c1d-2a4b6c8d0e1f")


def event_id(aggregate_id: UUID, aggregate_version: int) -> UUID:
    """Fixed when the event is recorded; a republish carries the same id."""
    return uuid5(CLUB_NS, f"{aggregate_id}:{aggregate_version}")


def enrollment_id_for(lesson_id: UUID, request_id: str) -> UUID:
    """A retried request finds the enrollment its first attempt committed."""
    return uuid5(CLUB_NS, f"enrollment:{lesson_id}:{request_id}")


def lesson_id_for(request_id: str) -> UUID:
    return uuid5(CLUB_NS, f"lesson:{request_id}")
