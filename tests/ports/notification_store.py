"""What every `NotificationStore` must do; each adapter's test subclasses this."""

from __future__ import annotations

from uuid import uuid4

from application.notification_record import NotificationRequest
from application.notifications import Kind, State
from application.ports import NotificationStore


def _request() -> NotificationRequest:
    return NotificationRequest(
        event_id=uuid4(),
        kind=Kind.CONFIRMATION,
        enrollment_id=uuid4(),
        lesson_id=uuid4(),
        student_id="ann",
    )


class NotificationStoreContract:
    """Not collected itself (no `Test` prefix); subclasses provide `store`."""

    def test_a_first_sight_opens_pending(self, store: NotificationStore) -> None:
        request = _request()
        row = store.open(request)
        assert (row.state, row.attempts, row.sent_at) == (State.PENDING, 0, None)
        assert store.open(request) == row

    def test_a_first_sight_can_open_sending_at_attempt_one(
        self, store: NotificationStore
    ) -> None:
        request = _request()
        assert store.open_sending(request) is True
        row = store.open(request)
        assert (row.state, row.attempts) == (State.SENDING, 1)

    def test_opening_sending_again_changes_nothing(
        self, store: NotificationStore
    ) -> None:
        request = _request()
        store.open(request)
        store.mark(request.event_id, State.FAILED, attempts=3, error="503 busy")
        assert store.open_sending(request) is False
        row = store.open(request)
        assert (row.state, row.attempts, row.last_error) == (
            State.FAILED,
            3,
            "503 busy",
        )

    def test_a_mark_keeps_what_it_does_not_name(self, store: NotificationStore) -> None:
        request = _request()
        store.open(request)
        store.mark(request.event_id, State.FAILED, attempts=2, error="timeout")
        store.mark(request.event_id, State.SENDING)
        row = store.open(request)
        assert (row.state, row.attempts, row.last_error) == (
            State.SENDING,
            2,
            "timeout",
        )
        assert row.sent_at is None

    def test_sent_stamps_the_time(self, store: NotificationStore) -> None:
        request = _request()
        store.open_sending(request)
        store.mark(request.event_id, State.SENT, provider_id="m-1")
        row = store.open(request)
        assert row.state is State.SENT
        assert row.sent_at is not None

    def test_sent_is_final_a_stale_worker_cannot_undo_it(
        self, store: NotificationStore
    ) -> None:
        """Two workers on one message (a redelivery while the first still ran):
        the one that finishes last with an older view never overwrites `sent`."""
        request = _request()
        store.open_sending(request)
        store.mark(request.event_id, State.SENT, provider_id="m-1")
        sent = store.open(request)
        for stale in (State.UNKNOWN, State.FAILED, State.DEAD_LETTERED, State.SENDING):
            store.mark(request.event_id, stale, attempts=9, error="a stale view")
        assert store.open(request) == sent
