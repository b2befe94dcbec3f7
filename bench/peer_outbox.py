"""The outbox a team would write by hand instead of using Club (issue #23).

FastAPI + SQLAlchemy's ORM, the way most services implement the transactional
outbox: a bearer token verified with PyJWT (HS256, the same secret, audience and
required claims as Club's), the `Idempotency-Key` looked up first, then in one
transaction the lesson's row locked (`SELECT … FOR UPDATE`), its enrollments
counted, the enrollment row, an outbox row (the event as JSON) and the key's row
with its answer inserted, one commit. No event store, no group commit, no
student lookup. The bench serves it with the same server as Club's API, on the
same PostgreSQL (a database of its own), driven by the same clients with the same
tokens; Club must be at least as fast (goal ≥ 1.0).

`python -m uvicorn bench.peer_outbox:create_app --factory` with PEER_DATABASE_URL
and CLUB_AUTH_SECRET set.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoint's
# dependencies (defined in create_app) from its evaluated annotations.
import os
from datetime import UTC, datetime
from typing import Annotated, Any
from uuid import UUID, uuid4

import jwt
from fastapi import Depends, FastAPI, Header, HTTPException
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel
from sqlalchemy import (
    JSON,
    DateTime,
    ForeignKey,
    Integer,
    String,
    UniqueConstraint,
    create_engine,
    func,
    select,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

LEEWAY_S = 30


class Base(DeclarativeBase):
    pass


class Lesson(Base):
    __tablename__ = "outbox_peer_lessons"
    lesson_id: Mapped[UUID] = mapped_column(primary_key=True)
    capacity: Mapped[int] = mapped_column(Integer)


class EnrollmentRow(Base):
    __tablename__ = "outbox_peer_enrollments"
    __table_args__ = (UniqueConstraint("lesson_id", "student_id"),)
    enrollment_id: Mapped[UUID] = mapped_column(primary_key=True)
    lesson_id: Mapped[UUID] = mapped_column(ForeignKey(Lesson.lesson_id))
    student_id: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(32))


class OutboxMessage(Base):
    __tablename__ = "outbox_peer_outbox"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    event_id: Mapped[UUID] = mapped_column(unique=True)
    aggregate_id: Mapped[UUID]
    event_type: Mapped[str] = mapped_column(String(128))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    published_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), default=None
    )


class IdempotencyKey(Base):
    __tablename__ = "outbox_peer_idempotency_keys"
    caller: Mapped[str] = mapped_column(String(255), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    status_code: Mapped[int]
    response: Mapped[dict[str, Any]] = mapped_column(JSON)


class EnrollmentIn(BaseModel):
    student_id: str


class EnrollmentOut(BaseModel):
    enrollment_id: UUID
    lesson_id: UUID
    student_id: str
    status: str


def migrate(database_url: str) -> None:
    engine = create_engine(_sqlalchemy_url(database_url))
    Base.metadata.create_all(engine)
    engine.dispose()


def new_lessons(database_url: str, capacity: int, count: int) -> list[UUID]:
    lessons = [uuid4() for _ in range(count)]
    engine = create_engine(_sqlalchemy_url(database_url))
    with Session(engine) as session, session.begin():
        session.add_all(Lesson(lesson_id=i, capacity=capacity) for i in lessons)
    engine.dispose()
    return lessons


def _sqlalchemy_url(database_url: str) -> str:
    return database_url.replace("postgresql://", "postgresql+psycopg://", 1)


_bearer = HTTPBearer()


def create_app() -> FastAPI:
    secret = os.environ["CLUB_AUTH_SECRET"].encode()
    # The same pool size as Club's API (bootstrap.container_options: 20).
    engine = create_engine(
        _sqlalchemy_url(os.environ["PEER_DATABASE_URL"]), pool_size=20
    )
    sessions = sessionmaker(engine, expire_on_commit=False)
    app = FastAPI()

    def caller(
        given: Annotated[HTTPAuthorizationCredentials, Depends(_bearer)],
    ) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                given.credentials, secret, algorithms=["HS256"], audience="club",
                leeway=LEEWAY_S, options={"require": ["exp", "sub"]},
            )  # fmt: skip
        except jwt.InvalidTokenError as e:
            raise HTTPException(401, str(e)) from None
        return claims

    def session() -> Any:
        with sessions() as s:
            yield s

    @app.get("/readyz")
    def ready() -> dict[str, str]:
        return {"status": "ready"}

    @app.post("/lessons/{lesson_id}/enrollments", status_code=201)
    def enroll(
        lesson_id: UUID,
        body: EnrollmentIn,
        claims: Annotated[dict[str, Any], Depends(caller)],
        db: Annotated[Session, Depends(session)],
        idempotency_key: Annotated[str, Header(min_length=1, max_length=255)],
    ) -> Any:
        if "student" not in claims.get("roles", []) or claims["sub"] != body.student_id:
            raise HTTPException(403, "a student enrolls itself only")
        who = (claims["sub"], idempotency_key)
        enrollment_id = uuid4()
        out = EnrollmentOut(
            enrollment_id=enrollment_id, lesson_id=lesson_id,
            student_id=body.student_id, status="confirmed",
        ).model_dump(mode="json")  # fmt: skip
        try:
            with db.begin():
                if (seen := db.get(IdempotencyKey, who)) is not None:
                    return JSONResponse(seen.response, seen.status_code)
                lesson = db.scalars(
                    select(Lesson)
                    .where(Lesson.lesson_id == lesson_id)
                    .with_for_update()
                ).one_or_none()
                if lesson is None:
                    raise HTTPException(404, "no such lesson")
                taken = db.scalar(
                    select(func.count()).where(EnrollmentRow.lesson_id == lesson_id)
                )
                if (taken or 0) >= lesson.capacity:
                    raise HTTPException(409, "lesson full")
                db.add_all(
                    [
                        EnrollmentRow(
                            enrollment_id=enrollment_id, lesson_id=lesson_id,
                            student_id=body.student_id, status="confirmed",
                        ),
                        OutboxMessage(
                            event_id=uuid4(), aggregate_id=enrollment_id,
                            event_type="EnrollmentConfirmed", payload=out,
                            created_at=datetime.now(UTC),
                        ),
                        IdempotencyKey(
                            caller=who[0], key=who[1], status_code=201, response=out
                        ),
                    ]
                )  # fmt: skip
        except IntegrityError:  # already enrolled, or a racing repeat of the key
            raise HTTPException(409, "already enrolled or a repeated key") from None
        location = f"/enrollments/{enrollment_id}"
        return JSONResponse(out, 201, headers={"Location": location})

    return app
