"""The purchase saga's e-mails through the real chain: purchase use cases on
PostgreSQL, the relay, JetStream, the notifications worker and the e-mail sandbox
as a real process (with faults), exactly one e-mail per event that asks for one."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from adapters.nats.dlq import replay_durable
from adapters.nats.streams import EVENTS_STREAM, REPLAY_STREAM
from adapters.nats.worker import ensure_worker_consumer
from adapters.providers.email_http import HttpEmailProvider
from application.commands import EnrollStudent, ScheduleLesson
from application.contracts.envelope import Envelope
from application.notifications import provider_key, request_for
from application.purchase_lookup import purchase_facts_from
from application.purchases import enrollment_id_of
from domain.student import StudentProfile
from entrypoints.runtime import work_classes
from tests.integration.helpers import make_relay, relay_all, stream_messages, with_js
from tests.integration.sandbox_process import SandboxProcess
from tests.integration.test_notifications import FAST, work_until

PRICE = 2500


def accepted_for(sandbox: SandboxProcess, addresses: set[str]) -> list[dict]:
    return [m for m in sandbox.listed(limit=500)["messages"] if m["to"] in addresses]


def run_the_three_purchases(container, tag: str) -> dict[str, UUID]:
    """ann pays in time; bob's hold expires unpaid; cat pays after her hold
    expired, is offered an alternative, and is refunded; dan enrolls directly, in
    the lesson's free twin."""
    app = container.app
    lesson_id = app.schedule_lesson(
        ScheduleLesson(
            lesson_id=uuid4(),
            title=f"Pottery {tag}",
            capacity=3,
            starts_at=datetime(2026, 12, 1, 10, tzinfo=UTC),
            price_cents=PRICE,
        )
    )
    purchases = app
    now = datetime.now(UTC)
    later = now + timedelta(seconds=901)
    ids = {}
    for name in ("ann", "bob", "cat"):
        student = f"{name}-{tag}"
        container.students.save(
            StudentProfile.create(
                student_id=student, email=f"{student}@example.org", name=name.title()
            )
        )
        view = purchases.reserve_purchase(
            lesson_id=lesson_id, student_id=student, request_id=student,
            now=now, hold_seconds=900,
        )  # fmt: skip
        ids[name] = view.purchase_id
    ann, bob, cat = ids["ann"], ids["bob"], ids["cat"]
    purchases.request_payment(ann, next_check_at=now)
    purchases.record_payment_captured(ann, payment_id=f"pay-{ann}", amount_cents=PRICE)
    purchases.grant_access(ann)
    purchases.expire_hold(bob, now=later)
    purchases.request_payment(cat, next_check_at=now)
    purchases.expire_hold(cat, now=later)
    purchases.record_payment_captured(cat, payment_id=f"pay-{cat}", amount_cents=PRICE)
    purchases.offer_alternative(cat, offer_expires_at=later + timedelta(days=1))
    purchases.request_refund(cat, now=later)
    purchases.record_refund_accepted(cat, refund_id=f"re-{cat}", next_check_at=later)
    purchases.record_refunded(cat, refund_id=f"re-{cat}")
    dan = f"dan-{tag}"
    container.students.save(
        StudentProfile.create(student_id=dan, email=f"{dan}@example.org", name="Dan")
    )
    free = app.schedule_lesson(  # the same class, free: a paid seat is only bought
        ScheduleLesson(
            lesson_id=uuid4(),
            title=f"Pottery {tag}",
            capacity=3,
            starts_at=datetime(2026, 12, 1, 10, tzinfo=UTC),
            price_cents=0,
        )
    )
    ids["dan"] = app.enroll(
        EnrollStudent(lesson_id=free, student_id=dan, request_id=dan)
    ).enrollment_id
    return ids


def test_each_purchase_event_that_asks_for_an_email_gets_exactly_one(
    migrated,
    container,
    email_sandbox: SandboxProcess,
    email_provider: HttpEmailProvider,
) -> None:
    """30% of sends fail with 503 and 10% are accepted with the reply dropped:
    the retries and look-ups still leave one accepted e-mail per event."""
    database_url, nats_url = migrated
    tag = uuid4().hex[:8]
    ids = run_the_three_purchases(container, tag)
    addresses = {f"{name}-{tag}@example.org" for name in ids}
    email_sandbox.set_knobs(fail_rate=0.3, drop_rate=0.1)
    expected = 7  # ann: payment, access; bob: expiry; cat: three; dan: enrolled

    async def body(js, nc) -> set[UUID]:
        await relay_all(make_relay(container, nc, database_url))
        ours = {*ids.values(), enrollment_id_of(ids["ann"])}
        seat_bought = enrollment_id_of(ids["ann"])
        published = [
            Envelope.from_json(m.subject, m.data) for m in await stream_messages(js)
        ]
        asking = {
            e.event_id
            for e in published
            if e.aggregate_id in ours
            and request_for(e) is not None
            # ann's seat: her access-granted e-mail already says she is enrolled
            and e.aggregate_id != seat_bought
        }
        await work_until(
            js, container, email_provider,
            lambda: len(accepted_for(email_sandbox, addresses)) >= expected,
            policy=FAST,
        )  # fmt: skip
        await asyncio.sleep(1)  # a late duplicate would show up here
        return asking

    asking = asyncio.run(with_js(nats_url, body))
    mails = accepted_for(email_sandbox, addresses)
    assert sorted(m["idempotency_key"] for m in mails) == sorted(
        provider_key(event_id) for event_id in asking
    )  # one per event, keyed by its id: none lost, none doubled
    title = f"Pottery {tag}"
    assert sorted((m["to"].split("-")[0], m["subject"]) for m in mails) == sorted(
        [
            ("ann", f"Payment received: {title}"),
            ("ann", f"Your seat is confirmed: {title}"),
            ("dan", f"You are enrolled: {title}"),
            ("bob", f"Your hold expired: {title}"),
            ("cat", f"Your hold expired: {title}"),
            ("cat", f"Payment received: {title}"),
            ("cat", f"Refunded: {title}"),
        ]
    )
    [refund] = [m for m in mails if m["subject"].startswith("Refunded")]
    assert "payment of 25.00" in refund["body"]
    for mail in mails:  # the name from the profile, read at send time
        assert mail["body"].startswith(f"Hello {mail['to'].split('-')[0].title()},")


def test_migrate_moves_an_existing_durable_to_the_wider_filter(migrated) -> None:
    """A broker migrated before purchases has the notifications durable on
    club.events.enrollment.>; the next `club migrate` widens it in place."""
    _, nats_url = migrated
    durable = f"notify-upgrade-{uuid4().hex[:6]}"
    subjects = work_classes.WORK_CLASSES[work_classes.NOTIFICATIONS].subjects

    async def body(js, nc) -> str | None:
        await ensure_worker_consumer(js, durable, "club.events.enrollment.>")
        await ensure_worker_consumer(js, durable, subjects)
        info = await js.consumer_info(EVENTS_STREAM, durable)
        await js.delete_consumer(EVENTS_STREAM, durable)
        await js.delete_consumer(REPLAY_STREAM, replay_durable(durable))
        return info.config.filter_subject

    assert asyncio.run(with_js(nats_url, body)) == "club.events.>"


def test_the_lookup_knows_a_bought_seat_from_a_plain_enrollment(container) -> None:
    """On PostgreSQL: a purchase's seat and a consented alternative's seat are
    bought; a direct enrollment and an unknown id are not."""
    tag = uuid4().hex[:8]
    ids = run_the_three_purchases(container, tag)
    app = purchases = container.app
    other = app.schedule_lesson(
        ScheduleLesson(
            lesson_id=uuid4(), title="Other", capacity=1,
            starts_at=datetime(2026, 12, 2, 10, tzinfo=UTC), price_cents=PRICE,
        )
    )  # fmt: skip
    late = datetime.now(UTC) + timedelta(seconds=901)
    bob = ids["bob"]  # expired: his payment arrives late, he takes the other seat
    purchases.record_payment_captured(bob, payment_id=f"pay-{bob}", amount_cents=PRICE)
    purchases.offer_alternative(bob, offer_expires_at=late + timedelta(days=1))
    moved = purchases.accept_alternative(bob, lesson_id=other, now=late)
    assert moved.alternative_purchase_id is not None
    lookup = purchase_facts_from(app)
    assert lookup.bought(enrollment_id_of(ids["ann"]))
    assert lookup.bought(enrollment_id_of(moved.alternative_purchase_id))
    assert not lookup.bought(ids["dan"])
    assert not lookup.bought(uuid4())
    assert lookup.facts(ids["ann"]).student_id == f"ann-{tag}"
