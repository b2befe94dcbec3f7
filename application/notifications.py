"""Notify a student once: the confirmation (or cancellation) e-mail as a job.

Sending never decides whether an enrollment succeeded; it happens afterwards, driven
by the published event, and every step leaves a recorded state behind it:

    pending -> sending -> sent
                       -> unknown  (the request left, no answer came)
                       -> failed   (refused for now; a retry is scheduled)
                       -> dead-lettered (refused for good, or out of attempts)

(The common first sight skips `pending`: its row is written `sending` at once.)
`sending` is committed *before* the provider is called, so a worker killed between
the call and the next commit leaves a row that says "the outcome is not known": the
next delivery looks the key up at the provider before it sends (never a blind
resend), and the provider's idempotency key — derived from the event id — makes a
resend of an accepted message a no-op anyway. The recipient's address is read from
the profile at send time (docs/decisions: the recipient policy); a purchase's
e-mail reads the purchase's student and lesson at send time too
(application/purchase_emails.py).

Each choice — send, look up, retry, dead-letter, done — is made by the pure
`application.notification_decision.decide`; `Notifier` is its shell: it reads the
row and the profile, calls the provider, records the state `decide` names and turns
its last action into the worker's outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from uuid import UUID

import attrs

from application.backoff import BackoffPolicy, Jitter
from application.contracts.envelope import Envelope
from application.contracts.events import EnrollmentCancelledV1, EnrollmentConfirmedV2
from application.contracts.mapping import decode
from application.contracts.purchase_events import PURCHASE_VERSIONS
from application.email import (
    OutcomeUnknownError,
    OutgoingEmail,
    PermanentSendError,
    TransientSendError,
)
from application.errors import NotFoundError
from application.notification_decision import (
    Accepted,
    Ack,
    Claim,
    Claimed,
    DeadLetter,
    Delivery,
    Failed,
    Heard,
    LookUp,
    LookupFailed,
    LookUpLater,
    Lost,
    Mark,
    Read,
    Refused,
    RetryLater,
    SeenBefore,
    Send,
    Start,
    State,
    WaitForProvider,
    decide,
)
from application.notification_kind import PURCHASE_KINDS, Kind
from application.notification_record import Notification, NotificationRequest
from application.personal_data import scrubbed, without_addresses
from application.ports import (
    EmailProvider,
    NotificationStore,
    ProviderCircuit,
    PurchaseLookup,
    StudentDirectory,
)
from application.provider_circuit import NoCircuit
from application.purchase_emails import (
    PurchaseNotice,
    purchase_notice,
    purchase_text,
)
from domain.student import StudentProfile


@attrs.frozen(kw_only=True)
class LessonFacts:
    title: str
    starts_at: datetime


@attrs.frozen
class Done:
    """Nothing left to do: ack."""


@attrs.frozen
class Retry:
    """Try again after `delay` seconds: NAK with that delay."""

    delay: float
    reason: str


@attrs.frozen
class GiveUp:
    """Dead-letter it with this reason; the owner decides what happens next."""

    reason: str


Outcome = Done | Retry | GiveUp


@attrs.frozen(kw_only=True)
class RetryPolicy:
    """Exponential backoff with full jitter, capped, for a bounded number of tries;
    never sooner than the provider's Retry-After."""

    max_attempts: int = 10
    first_delay: float = 1.0
    max_delay: float = 60.0
    unknown_delay: float = 1.0  # before looking an unknown outcome up
    # No resend this long after the first send (CLUB_NOTIFY_GIVE_UP_AFTER).
    give_up_after: float = 12 * 3600.0
    provider_wait: float = 10.0  # a message put back while the provider is down

    @property
    def backoff(self) -> BackoffPolicy:
        return BackoffPolicy(
            first=self.first_delay, cap=self.max_delay, jitter=Jitter.FULL
        )

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        return max(self.backoff.delay(attempt), retry_after or 0.0)


_PURCHASE_TYPES = frozenset(cls.TYPE for cls in PURCHASE_VERSIONS)


def request_for(
    envelope: Envelope, *, replayed: bool = False
) -> NotificationRequest | PurchaseNotice | None:
    """The notification an event asks for, or None (it asks for none). Raises what
    `decode` raises for an unreadable event."""
    event = decode(envelope)
    if envelope.type in _PURCHASE_TYPES:
        return purchase_notice(event, envelope.event_id, replayed=replayed)
    if isinstance(event, EnrollmentConfirmedV2):
        kind = Kind.CONFIRMATION
    elif isinstance(event, EnrollmentCancelledV1):
        kind = Kind.CANCELLATION
    else:
        return None
    return NotificationRequest(
        event_id=envelope.event_id,
        kind=kind,
        enrollment_id=event.enrollment_id,
        lesson_id=event.lesson_id,
        student_id=event.student_id,
        replayed=replayed,
    )


def provider_key(event_id: UUID) -> str:
    """The same notification always names the same message at the provider."""
    return f"club-notification-{event_id}"


def compose(
    request: NotificationRequest, lesson: LessonFacts, to: str, name: str
) -> OutgoingEmail:
    when = lesson.starts_at.strftime("%Y-%m-%d %H:%M %Z")
    if request.kind in PURCHASE_KINDS:
        subject, text = purchase_text(
            request.kind, lesson.title, when, request.amount_cents
        )
        body = f"Hello {name},\n\n{text}"
    elif request.kind is Kind.CONFIRMATION:
        subject = f"You are enrolled: {lesson.title}"
        body = f"Hello {name},\n\nyour seat in {lesson.title} on {when} is saved."
    else:
        subject = f"Enrollment cancelled: {lesson.title}"
        body = (
            f"Hello {name},\n\nyour enrollment in {lesson.title} on {when} "
            "is cancelled."
        )
    return OutgoingEmail(to=to, subject=_one_line(subject), body=body)


def _one_line(text: str) -> str:
    return " ".join(text.split())


MAX_STEPS = 8  # a delivery takes five at most: claim, read, look up, send, outcome


class Notifier:
    """The shell around `decide`: reads, calls and records what it names; the
    worker turns the outcome into ack/NAK/DLQ."""

    def __init__(
        self,
        *,
        store: NotificationStore,
        provider: EmailProvider,
        students: StudentDirectory,
        lessons: Callable[[UUID], LessonFacts],
        purchases: PurchaseLookup,
        policy: RetryPolicy | None = None,
        circuit: ProviderCircuit | None = None,
    ) -> None:
        self._store = store
        self._provider = provider
        self._circuit: ProviderCircuit = circuit or NoCircuit()
        self._students = students
        self._lessons = lessons
        self._purchases = purchases
        self._policy = policy or RetryPolicy()

    def handle(self, request: NotificationRequest | PurchaseNotice) -> Outcome:
        if isinstance(request, PurchaseNotice):
            try:
                request = self._resolve(request)
            except NotFoundError as error:  # a forged event: nobody to write to
                return GiveUp(f"no such purchase: {error}")
        elif request.kind is Kind.CONFIRMATION and self._purchases.bought(
            request.enrollment_id
        ):
            return Done()  # a bought seat: its access-granted e-mail says it all
        # Read once per delivery, at send time (the recipient policy).
        profile = self._students.get(request.student_id)
        return self._deliver(request, profile)

    def _deliver(
        self, request: NotificationRequest, profile: StudentProfile | None
    ) -> Outcome:
        """Ask `decide`, record the state it names, make the call it names, and
        again with the answer, until it names the worker's outcome."""
        event_id = request.event_id
        delivery = Delivery(
            student_id=request.student_id,
            has_profile=profile is not None,
            replayed=request.replayed,
        )
        heard: Heard = Start()
        message: OutgoingEmail | None = None  # composed for a first sight's claim
        for _ in range(MAX_STEPS):
            step = decide(
                delivery,
                heard,
                max_attempts=self._policy.max_attempts,
                give_up_after=self._policy.give_up_after,
            )
            action = step.action
            if isinstance(action, Send):
                if message is None:  # composed before `sending` is recorded
                    message = self._compose(request, profile)
                self._record(event_id, step.record)
                delivery, heard = step.after, self._call(event_id, message, profile)
                continue
            self._record(event_id, step.record)
            delivery = step.after
            if isinstance(action, Claim):
                message, heard = self._send_first(request, profile)
            elif isinstance(action, Read):
                message, heard = None, Start()  # composed afresh if it is sent
                found = self._store.open(request)
                delivery = attrs.evolve(
                    delivery,
                    recorded=found.state,
                    attempts=found.attempts,
                    last_error=found.last_error,
                    age_s=found.age_s,
                )
            elif isinstance(action, LookUp):
                heard = self._reconcile(event_id)
            else:
                return self._outcome(action)
        msg = f"notification {event_id} did not settle in {MAX_STEPS} steps"
        raise RuntimeError(msg)

    def _resolve(self, notice: PurchaseNotice) -> NotificationRequest:
        """The purchase's student and lesson, read now (the event has neither)."""
        facts = self._purchases.facts(notice.purchase_id)
        amount = notice.amount_cents
        if notice.kind is Kind.REFUNDED:
            amount = facts.refund_cents  # Refunded names the refund, not the sum
        return NotificationRequest(
            event_id=notice.event_id,
            kind=notice.kind,
            enrollment_id=facts.seat_id,
            lesson_id=facts.lesson_id,
            student_id=facts.student_id,
            replayed=notice.replayed,
            amount_cents=amount,
        )

    def _send_first(
        self, request: NotificationRequest, profile: StudentProfile | None
    ) -> tuple[OutgoingEmail, Heard]:
        """The common case in one write fewer: a notification never seen before
        is created `sending` by the write that records it (the message is
        composed first: nothing is recorded if that fails)."""
        message = self._compose(request, profile)
        claimed = self._store.open_sending(request)
        return message, Claimed() if claimed else SeenBefore()

    def _reconcile(self, event_id: UUID) -> Heard:
        """What the provider holds under the key: an earlier attempt may have
        been accepted, so it is asked before sending again."""
        try:
            status = self._provider.status(provider_key(event_id))
        except TransientSendError as error:
            said = _said(error)
            return LookupFailed(said, error.retry_after, self._outage(error, said))
        self._circuit.answered()
        return status

    def _compose(
        self, request: NotificationRequest, profile: StudentProfile | None
    ) -> OutgoingEmail:
        if profile is None:  # `decide` sends only to a student with a profile
            msg = f"nothing to compose: student {request.student_id} has no profile"
            raise RuntimeError(msg)
        lesson = self._lessons(request.lesson_id)
        return compose(request, lesson, profile.email, profile.name)

    def _call(
        self,
        event_id: UUID,
        message: OutgoingEmail,
        profile: StudentProfile | None,
    ) -> Heard:
        """`sending` is committed: call the provider; what it said, without the
        student's address or name."""
        try:
            result = self._provider.send(message, provider_key(event_id))
        except PermanentSendError as error:
            self._circuit.answered()  # it refused this message: it is up
            return Refused(_said(error, profile))
        except TransientSendError as error:
            said = _said(error, profile)
            return Failed(said, error.retry_after, self._outage(error, said))
        except OutcomeUnknownError as error:
            return Lost(_said(error, profile))
        self._circuit.answered()
        return Accepted(result.provider_id)

    def _outage(self, error: TransientSendError, said: str) -> bool:
        """Counted by the provider's circuit; True: it is open, the provider
        fails everyone. A 429 is the provider answering: not counted."""
        return False if error.throttled else self._circuit.failed(said)

    def _record(self, event_id: UUID, mark: Mark | None) -> None:
        if mark is not None:
            self._store.mark(
                event_id,
                mark.state,
                attempts=mark.attempts,
                error=mark.error,
                provider_id=mark.provider_id,
            )

    def _outcome(
        self, last: Ack | RetryLater | LookUpLater | WaitForProvider | DeadLetter
    ) -> Outcome:
        """The worker's outcome; a retry's delay (its jitter) is drawn here."""
        if isinstance(last, Ack):
            return Done()
        if isinstance(last, RetryLater):
            delay = self._policy.delay(last.attempt, last.retry_after)
            return Retry(delay, last.reason)
        if isinstance(last, LookUpLater):
            return Retry(self._policy.unknown_delay, last.reason)
        if isinstance(last, WaitForProvider):  # no attempt spent
            return Retry(self._policy.provider_wait, f"provider down: {last.reason}")
        return GiveUp(last.reason)


def _said(error: Exception, profile: StudentProfile | None = None) -> str:
    """What the provider said, without the student's address or name: a refusal
    often quotes the recipient, and this text is stored in the notification's row,
    dead-lettered with the message and logged (docs/guarantees.md, personal data)."""
    if profile is None:
        return without_addresses(str(error))
    return scrubbed(str(error), email=profile.email, name=profile.name)


# `Kind` lives in its own module (purchase_emails needs it too), the row and the
# request in theirs (the store's port speaks them); stores read them here.
__all__ = [
    "Kind",
    "Notification",
    "NotificationRequest",
    "Notifier",
    "State",
    "compose",
    "request_for",
]
