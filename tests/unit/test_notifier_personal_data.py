"""A provider that quotes the recipient: the quote reaches no row, reason or retry.

Real mail services do quote it ("550 5.1.1 <ann@x.org>: Recipient address
rejected"); what the notifier keeps of that text is stored in the notification's
row, becomes the dead letter's reason and is logged."""

from __future__ import annotations

import pytest

from adapters.memory.notifications import InMemoryNotificationStore
from adapters.memory.students import InMemoryStudentDirectory
from application.email import (
    EmailSendError,
    OutcomeUnknownError,
    PermanentSendError,
    TransientSendError,
)
from application.notifications import (
    GiveUp,
    Notifier,
    Retry,
    RetryPolicy,
)
from domain.student import StudentProfile
from tests.unit.test_notifier import (
    ScriptedProvider,
    build_notifier,
    fail,
    request,
)

ADDRESS = "zoë.quill-7@mailbox.example.org"
NAME = "Zoë Quillfeather"
QUOTE = f"550 5.1.1 <{ADDRESS}>: no mailbox for {NAME}; other: x.y@elsewhere.net"


def notifier(provider: ScriptedProvider, store: InMemoryNotificationStore) -> Notifier:
    students = InMemoryStudentDirectory()
    students.save(StudentProfile.create(student_id="zq", email=ADDRESS, name=NAME))
    return build_notifier(provider, store, students, RetryPolicy(max_attempts=2))


def assert_clean(text: str | None) -> None:
    assert text is not None
    for secret in (ADDRESS, NAME, "x.y@elsewhere.net"):
        assert secret not in text
    assert "550 5.1.1" in text  # the rest of what the provider said is kept


@pytest.mark.parametrize(
    "error",
    [
        PermanentSendError(QUOTE),
        TransientSendError(QUOTE),
        OutcomeUnknownError(QUOTE),
    ],
)
def test_what_the_provider_said_is_kept_without_the_student(
    error: EmailSendError,
) -> None:
    provider, store = ScriptedProvider(), InMemoryNotificationStore()
    asked = request("zq")
    provider.script = [fail(error)] * 2
    outcome = notifier(provider, store).handle(asked)
    assert isinstance(outcome, GiveUp | Retry)
    assert_clean(outcome.reason)
    assert_clean(store.rows[asked.event_id].last_error)


def test_giving_up_after_the_attempts_quotes_no_one_either() -> None:
    provider, store = ScriptedProvider(), InMemoryNotificationStore()
    asked = request("zq")
    provider.script = [fail(TransientSendError(QUOTE))] * 2
    job = notifier(provider, store)
    assert isinstance(job.handle(asked), Retry)
    gave_up = job.handle(asked)
    assert isinstance(gave_up, GiveUp)
    assert "gave up after 2 attempts" in gave_up.reason
    assert_clean(gave_up.reason)
    assert_clean(store.rows[asked.event_id].last_error)
