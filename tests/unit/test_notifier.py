"""The notification job's decisions, step by step, on in-memory ports.

The provider here is a scripted stand-in for the port (the sandbox service is what
the integration and fault tests use); each test scripts what the provider does and
checks what the job decided and recorded."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest

from adapters.memory.notifications import InMemoryNotificationStore
from adapters.memory.students import InMemoryStudentDirectory
from application.email import (
    DeliveryStatus,
    OutcomeUnknownError,
    OutgoingEmail,
    PermanentSendError,
    SendResult,
    TransientSendError,
)
from application.errors import NotFoundError
from application.notification_record import NotificationRequest
from application.notifications import (
    Done,
    GiveUp,
    Kind,
    LessonFacts,
    Notifier,
    Retry,
    RetryPolicy,
    State,
    provider_key,
    request_for,
)
from application.purchase_emails import PurchaseFacts, PurchaseNotice
from domain.student import StudentProfile
from tests.contracts.test_published_events import EXAMPLES, load

# The purchases the notifier can look up, by id (what the event store would say),
# and the enrollments that are purchases' seats.
PURCHASES: dict[UUID, PurchaseFacts] = {}
BOUGHT: set[UUID] = set()


class KnownPurchases:
    def facts(self, purchase_id: UUID) -> PurchaseFacts:
        if purchase_id not in PURCHASES:
            raise NotFoundError("purchase", purchase_id)
        return PURCHASES[purchase_id]

    def bought(self, enrollment_id: UUID) -> bool:
        return enrollment_id in BOUGHT


class ScriptedProvider:
    """Accepts by default; `script` pops one behaviour per send."""

    def __init__(self) -> None:
        self.accepted: dict[str, OutgoingEmail] = {}
        self.sends = 0
        self.script: list[Callable[[str, OutgoingEmail], None]] = []
        self.lookup: DeliveryStatus | None = None

    def send(self, message: OutgoingEmail, idempotency_key: str) -> SendResult:
        self.sends += 1
        if self.script:
            self.script.pop(0)(idempotency_key, message)
        self.accepted.setdefault(idempotency_key, message)
        return SendResult(provider_id=f"m-{len(self.accepted)}")

    def status(self, idempotency_key: str) -> DeliveryStatus:
        if self.lookup is not None:
            return self.lookup
        if idempotency_key in self.accepted:
            return DeliveryStatus.ACCEPTED
        return DeliveryStatus.NOT_FOUND


def fail(error: Exception) -> Callable[[str, OutgoingEmail], None]:
    def raise_it(_key: str, _message: OutgoingEmail) -> None:
        raise error

    return raise_it


def accept_then_lose_reply(provider: ScriptedProvider):
    def lose(key: str, message: OutgoingEmail) -> None:
        provider.accepted[key] = message
        raise OutcomeUnknownError("connection closed mid-response")

    return lose


@pytest.fixture
def provider() -> ScriptedProvider:
    return ScriptedProvider()


@pytest.fixture
def store() -> InMemoryNotificationStore:
    return InMemoryNotificationStore()


@pytest.fixture
def students() -> InMemoryStudentDirectory:
    students = InMemoryStudentDirectory()
    students.save(StudentProfile.create(student_id="ann", email="a@b.org", name="Ann"))
    return students


def build_notifier(provider, store, students, policy: RetryPolicy) -> Notifier:
    """The notifier on in-memory ports; every lesson is Yoga on 1 December."""
    return Notifier(
        store=store,
        provider=provider,
        students=students,
        lessons=lambda _: LessonFacts(
            title="Yoga", starts_at=datetime(2026, 12, 1, 10, tzinfo=UTC)
        ),
        purchases=KnownPurchases(),
        policy=policy,
    )


@pytest.fixture
def notifier(provider, store, students) -> Notifier:
    policy = RetryPolicy(max_attempts=3, first_delay=1.0, max_delay=8.0)
    return build_notifier(provider, store, students, policy)


def request(student_id: str = "ann", **changes) -> NotificationRequest:
    fields = {
        "event_id": uuid4(),
        "kind": Kind.CONFIRMATION,
        "enrollment_id": uuid4(),
        "lesson_id": uuid4(),
        "student_id": student_id,
    }
    return NotificationRequest(**(fields | changes))


def state(store: InMemoryNotificationStore, event_id: UUID) -> State:
    return store.rows[event_id].state


def test_a_notification_is_sent_once_and_recorded(notifier, provider, store) -> None:
    asked = request()
    assert notifier.handle(asked) == Done()
    assert notifier.handle(asked) == Done()  # redelivered after the commit
    assert provider.sends == 1
    row = store.rows[asked.event_id]
    assert row.state is State.SENT
    assert row.sent_at is not None
    [message] = provider.accepted.values()
    assert message.to == "a@b.org"
    assert "Yoga" in message.subject


def test_a_transient_refusal_retries_later_obeying_retry_after(
    notifier, provider, store
) -> None:
    asked = request()
    provider.script = [fail(TransientSendError("429", retry_after=30.0))]
    outcome = notifier.handle(asked)
    assert isinstance(outcome, Retry)
    assert outcome.delay >= 30.0
    assert state(store, asked.event_id) is State.FAILED
    assert notifier.handle(asked) == Done()
    assert store.rows[asked.event_id].attempts == 2


def test_transient_refusals_are_bounded_then_dead_lettered(
    notifier, provider, store
) -> None:
    asked = request()
    provider.script = [fail(TransientSendError("503"))] * 3
    outcomes = [notifier.handle(asked) for _ in range(3)]
    assert [type(o) for o in outcomes] == [Retry, Retry, GiveUp]
    assert all(o.delay <= 8.0 for o in outcomes[:2])  # capped backoff
    assert "gave up after 3 attempts" in outcomes[2].reason
    assert state(store, asked.event_id) is State.DEAD_LETTERED
    assert notifier.handle(asked) == GiveUp(store.rows[asked.event_id].last_error)


def test_a_permanent_refusal_is_dead_lettered_at_once(
    notifier, provider, store
) -> None:
    asked = request()
    provider.script = [fail(PermanentSendError("400: address refused"))]
    outcome = notifier.handle(asked)
    assert isinstance(outcome, GiveUp)
    assert "address refused" in outcome.reason
    assert state(store, asked.event_id) is State.DEAD_LETTERED


def test_an_unknown_outcome_is_looked_up_not_resent(notifier, provider, store) -> None:
    asked = request()
    provider.script = [accept_then_lose_reply(provider)]
    assert isinstance(notifier.handle(asked), Retry)
    assert state(store, asked.event_id) is State.UNKNOWN
    assert notifier.handle(asked) == Done()  # the lookup says: accepted
    assert provider.sends == 1
    assert state(store, asked.event_id) is State.SENT


def test_an_unknown_outcome_the_provider_never_saw_is_sent(
    notifier, provider, store
) -> None:
    asked = request()
    provider.script = [fail(OutcomeUnknownError("read timeout"))]
    assert isinstance(notifier.handle(asked), Retry)
    assert notifier.handle(asked) == Done()  # the lookup says: not found, so send
    assert provider.sends == 2
    assert len(provider.accepted) == 1


def test_a_worker_killed_after_the_call_leaves_sending_and_is_reconciled(
    notifier, provider, store
) -> None:
    asked = request()
    notifier.handle(asked)
    store.mark(asked.event_id, State.SENDING)  # as if killed before `sent` committed
    assert notifier.handle(asked) == Done()
    assert provider.sends == 1


def test_without_a_status_lookup_an_unknown_outcome_goes_to_a_person(
    notifier, provider, store
) -> None:
    asked = request()
    provider.script = [fail(OutcomeUnknownError("SMTP connection dropped"))]
    notifier.handle(asked)
    provider.lookup = DeliveryStatus.UNKNOWN
    outcome = notifier.handle(asked)
    assert isinstance(outcome, GiveUp)
    assert "no status lookup" in outcome.reason
    assert provider.sends == 1  # never a blind resend


def test_a_student_without_a_profile_is_dead_lettered(notifier, provider) -> None:
    outcome = notifier.handle(request(student_id="nobody"))
    assert isinstance(outcome, GiveUp)
    assert "no profile" in outcome.reason
    assert provider.sends == 0


def test_a_replayed_dead_letter_is_tried_afresh_once(notifier, provider, store) -> None:
    asked = request()
    provider.script = [fail(PermanentSendError("400: mailbox full"))]
    assert isinstance(notifier.handle(asked), GiveUp)
    replay = request(
        event_id=asked.event_id,
        enrollment_id=asked.enrollment_id,
        lesson_id=asked.lesson_id,
        replayed=True,
    )
    assert notifier.handle(replay) == Done()
    assert notifier.handle(replay) == Done()  # replaying twice sends nothing more
    assert len(provider.accepted) == 1
    assert provider_key(asked.event_id) in provider.accepted


def replay_of(asked: NotificationRequest) -> NotificationRequest:
    return request(
        event_id=asked.event_id,
        enrollment_id=asked.enrollment_id,
        lesson_id=asked.lesson_id,
        replayed=True,
    )


class FailingLookup(ScriptedProvider):
    def status(self, idempotency_key: str) -> DeliveryStatus:
        raise TransientSendError("status lookup: ReadTimeout")


def test_an_outcome_never_known_is_bounded_then_dead_lettered(
    notifier, provider, store
) -> None:
    """A provider that times out after every request: looked up (nothing there),
    sent again, unknown again — three attempts, then the DLQ, not for ever."""
    asked = request()
    provider.script = [fail(OutcomeUnknownError("ReadTimeout"))] * 3
    outcomes = [notifier.handle(asked) for _ in range(3)]
    assert [type(o) for o in outcomes] == [Retry, Retry, GiveUp]
    assert "outcome unknown after 3 attempts" in outcomes[2].reason
    assert provider.sends == 3  # each after a lookup found nothing
    assert state(store, asked.event_id) is State.DEAD_LETTERED


def test_a_status_lookup_that_always_fails_is_bounded_then_dead_lettered(
    store, students
) -> None:
    provider = FailingLookup()
    policy = RetryPolicy(max_attempts=4, first_delay=1.0, max_delay=100.0)
    notifier = build_notifier(provider, store, students, policy)
    asked = request()
    provider.script = [fail(OutcomeUnknownError("ReadTimeout"))]
    outcomes = [notifier.handle(asked) for _ in range(4)]
    assert [type(o) for o in outcomes] == [Retry, Retry, Retry, GiveUp]
    # Each failed lookup counts: the ceilings of the jittered delays double.
    assert outcomes[1].delay <= 2.0
    assert outcomes[2].delay <= 4.0
    assert "4 status lookups failed" in outcomes[3].reason
    assert provider.sends == 1  # never resent while the outcome is not known
    assert state(store, asked.event_id) is State.DEAD_LETTERED


def test_a_replayed_dead_letter_the_provider_holds_is_not_sent_again(
    notifier, provider, store
) -> None:
    """Dead-lettered with its outcome unknown, though the provider had it: the
    replay looks the key up first, and records `sent`."""
    asked = request()
    provider.script = [accept_then_lose_reply(provider)] + [
        fail(OutcomeUnknownError("ReadTimeout"))
    ] * 2
    provider.lookup = DeliveryStatus.NOT_FOUND  # the lookups said nothing yet
    assert isinstance([notifier.handle(asked) for _ in range(3)][-1], GiveUp)
    provider.lookup = None  # now it answers: accepted
    assert notifier.handle(replay_of(asked)) == Done()
    assert provider.sends == 3
    assert state(store, asked.event_id) is State.SENT


def test_a_replay_is_bounded_like_any_delivery(notifier, provider, store) -> None:
    """Only its first delivery starts afresh (the worker marks that one); its
    redeliveries count on."""
    asked = request()
    provider.script = [fail(PermanentSendError("400: mailbox full"))] + [
        fail(TransientSendError("503"))
    ] * 3
    notifier.handle(asked)
    outcomes = [notifier.handle(replay_of(asked)), *map(notifier.handle, [asked] * 2)]
    assert [type(o) for o in outcomes] == [Retry, Retry, GiveUp]
    assert provider.sends == 4
    assert state(store, asked.event_id) is State.DEAD_LETTERED


def test_a_replay_starts_afresh_where_an_outage_left_the_row(
    notifier, provider, store
) -> None:
    """Dead-lettered while our own database was down, the row still says
    `failed` with its attempts spent: the replay gets its full count, and looks
    the key up before it sends."""
    asked = request()
    provider.script = [fail(TransientSendError("503"))] * 2
    notifier.handle(asked)
    notifier.handle(asked)
    assert store.rows[asked.event_id].attempts == 2  # one short of the bound
    provider.script = [fail(TransientSendError("503"))]
    assert isinstance(notifier.handle(replay_of(asked)), Retry)  # not a GiveUp
    assert notifier.handle(asked) == Done()
    assert store.rows[asked.event_id].attempts == 2


def test_without_a_status_lookup_a_replay_is_a_persons_choice_to_send(
    notifier, provider, store
) -> None:
    asked = request()
    provider.script = [fail(OutcomeUnknownError("SMTP connection dropped"))]
    notifier.handle(asked)
    provider.lookup = DeliveryStatus.UNKNOWN
    assert isinstance(notifier.handle(asked), GiveUp)
    assert notifier.handle(replay_of(asked)) == Done()
    assert provider.sends == 2
    assert state(store, asked.event_id) is State.SENT


# -- the purchase saga's e-mails ---------------------------------------------


def purchase(student_id: str = "ann", refund_cents: int = 0) -> UUID:
    purchase_id = uuid4()
    PURCHASES[purchase_id] = PurchaseFacts(
        student_id=student_id,
        lesson_id=uuid4(),
        seat_id=uuid4(),
        refund_cents=refund_cents,
    )
    return purchase_id


def notice(
    kind: Kind, purchase_id: UUID, amount_cents: int | None = None
) -> PurchaseNotice:
    return PurchaseNotice(
        event_id=uuid4(), kind=kind, purchase_id=purchase_id, amount_cents=amount_cents
    )


@pytest.mark.parametrize(
    ("example", "kind", "amount"),
    [
        ("PaymentCaptured", Kind.PAYMENT_RECEIVED, 2500),
        ("PurchaseConfirmed", Kind.ACCESS_GRANTED, None),
        ("HoldExpired", Kind.HOLD_EXPIRED, None),
        ("Refunded", Kind.REFUNDED, None),
    ],
)
def test_a_purchase_event_asks_for_its_email(
    example: str, kind: Kind, amount: int | None
) -> None:
    envelope = load(EXAMPLES / example / "v1.json")
    asked = request_for(envelope, replayed=True)
    assert asked == PurchaseNotice(
        event_id=envelope.event_id,
        kind=kind,
        purchase_id=envelope.aggregate_id,
        amount_cents=amount,
        replayed=True,
    )


@pytest.mark.parametrize(
    "example",
    ["PurchaseReserved", "RefundRequested", "ManualReviewRequired",
     "AlternativeOffered", "LessonScheduled", "ExportRequested"],
)  # fmt: skip
def test_other_events_ask_for_no_email(example: str) -> None:
    """The worker reads all of club.events.>: these are acked without a send."""
    assert request_for(load(EXAMPLES / example / "v1.json")) is None


@pytest.mark.parametrize(
    ("kind", "subject", "says"),
    [
        (Kind.PAYMENT_RECEIVED, "Payment received: Yoga", "payment of 25.00"),
        (Kind.ACCESS_GRANTED, "Your seat is confirmed: Yoga", "is yours"),
        (Kind.HOLD_EXPIRED, "Your hold expired: Yoga", "is refunded, or moved"),
        (Kind.REFUNDED, "Refunded: Yoga", "payment of 19.05 for Yoga"),
    ],
)
def test_each_purchase_email_is_sent_once_to_the_purchases_student(
    notifier: Notifier,
    provider: ScriptedProvider,
    store: InMemoryNotificationStore,
    kind: Kind,
    subject: str,
    says: str,
) -> None:
    purchase_id = purchase(refund_cents=1905)
    asked = notice(kind, purchase_id, amount_cents=2500)
    assert notifier.handle(asked) == Done()
    assert notifier.handle(asked) == Done()  # redelivered: recognised by event id
    assert provider.sends == 1
    message = provider.accepted[provider_key(asked.event_id)]
    assert message.to == "a@b.org"
    assert message.subject == subject
    assert message.body.startswith("Hello Ann,")
    assert says in message.body
    assert "2026-12-01 10:00 UTC" in message.body
    row = store.rows[asked.event_id]
    assert (row.kind, row.state) == (kind, State.SENT)
    assert row.enrollment_id == PURCHASES[purchase_id].seat_id  # filed by its seat


def test_a_purchase_email_reads_the_recipient_at_send_time(
    notifier: Notifier,
    provider: ScriptedProvider,
    students: InMemoryStudentDirectory,
) -> None:
    purchase_id = purchase(student_id="bob")
    early = notice(Kind.PAYMENT_RECEIVED, purchase_id, amount_cents=100)
    assert isinstance(notifier.handle(early), GiveUp)  # no profile yet
    students.save(
        StudentProfile.create(student_id="bob", email="bob@b.org", name="Bob")
    )
    assert notifier.handle(notice(Kind.ACCESS_GRANTED, purchase_id)) == Done()
    [message] = provider.accepted.values()
    assert message.to == "bob@b.org"


def test_an_email_for_a_purchase_never_recorded_is_dead_lettered(
    notifier: Notifier,
    provider: ScriptedProvider,
    store: InMemoryNotificationStore,
) -> None:
    """A forged event (or one from another database) has nobody to write to."""
    forged = notice(Kind.REFUNDED, uuid4())
    outcome = notifier.handle(forged)
    assert isinstance(outcome, GiveUp)
    assert f"purchase {forged.purchase_id} does not exist" in outcome.reason
    assert provider.sends == 0
    assert store.rows == {}


def test_a_bought_seat_gets_no_second_confirmation(
    notifier: Notifier, provider: ScriptedProvider, store: InMemoryNotificationStore
) -> None:
    """Its PurchaseConfirmed e-mail ("your seat is confirmed") already said it."""
    seat = uuid4()
    BOUGHT.add(seat)
    assert notifier.handle(request(enrollment_id=seat)) == Done()
    assert provider.sends == 0
    assert store.rows == {}
    cancelled = request(enrollment_id=seat, kind=Kind.CANCELLATION)
    assert notifier.handle(cancelled) == Done()  # a cancellation is news: sent
    assert provider.sends == 1
