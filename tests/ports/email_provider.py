"""What every `EmailProvider` must do; each adapter's test subclasses this.

Subclasses provide `provider` (reaching a live server), `unreachable` (pointing
at a port where nothing listens), `refused_address` (a recipient that server
refuses for good) and `received` (how many messages the server holds for a key).
"""

from __future__ import annotations

from collections.abc import Callable
from uuid import uuid4

import pytest

from application.email import (
    DeliveryStatus,
    OutgoingEmail,
    PermanentSendError,
    TransientSendError,
)
from application.ports import EmailProvider

WELCOME = OutgoingEmail(
    to="ann@example.org", subject="You are enrolled", body="Yoga, Tuesday 10:00."
)


class EmailProviderContract:
    """Not collected itself (no `Test` prefix)."""

    def test_a_send_is_received_once(
        self, provider: EmailProvider, received: Callable[[str], int]
    ) -> None:
        key = str(uuid4())
        result = provider.send(WELCOME, key)
        assert result.provider_id
        assert received(key) == 1

    def test_an_unreachable_provider_is_transient(
        self, unreachable: EmailProvider
    ) -> None:
        with pytest.raises(TransientSendError, match="not reached"):
            unreachable.send(WELCOME, str(uuid4()))

    def test_a_refused_address_is_permanent(
        self, provider: EmailProvider, refused_address: str,
        received: Callable[[str], int],
    ) -> None:  # fmt: skip
        key = str(uuid4())
        refused = OutgoingEmail(to=refused_address, subject="s", body="b")
        with pytest.raises(PermanentSendError):
            provider.send(refused, key)
        assert received(key) == 0

    def test_an_unsent_key_is_never_reported_accepted(
        self, provider: EmailProvider
    ) -> None:
        assert provider.status(str(uuid4())) in {
            DeliveryStatus.NOT_FOUND,
            DeliveryStatus.UNKNOWN,
        }

    def test_a_sent_key_is_never_reported_not_found(
        self, provider: EmailProvider
    ) -> None:
        # NOT_FOUND tells the worker a resend is safe: it must never be a lie.
        key = str(uuid4())
        provider.send(WELCOME, key)
        assert provider.status(key) in {DeliveryStatus.ACCEPTED, DeliveryStatus.UNKNOWN}
