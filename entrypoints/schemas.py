"""HTTP request and response bodies; the domain never sees these."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StudentIn(Body):
    email: str = Field(max_length=254)
    name: str = Field(max_length=200)


class StudentOut(BaseModel):
    student_id: str
    email: str
    name: str


class LessonIn(Body):
    title: str = Field(max_length=200)
    capacity: int = Field(ge=1, le=10_000)
    starts_at: AwareDatetime
    price_cents: int = Field(ge=0, default=0)


class LessonOut(BaseModel):
    lesson_id: UUID
    title: str
    capacity: int
    seats_taken: int
    seats_held: int
    starts_at: datetime
    price_cents: int
    version: int


class EnrollmentIn(Body):
    student_id: str = Field(min_length=1, max_length=64)


class EnrollmentOut(BaseModel):
    enrollment_id: UUID
    lesson_id: UUID
    student_id: str
    status: str
