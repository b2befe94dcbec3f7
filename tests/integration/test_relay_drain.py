"""`relay_all` publishes everything once, and says so when another relay held on."""

from __future__ import annotations

import pytest

from adapters.nats.relay_drain import NeverLeasedError, relay_all
from tests.builders import lesson_with_enrollments
from tests.integration.helpers import make_relay, run, stream_messages, with_js


def test_a_relay_that_never_got_the_lease_is_an_error_not_silence(
    container, migrated
) -> None:
    database_url, nats_url = migrated
    lesson_with_enrollments(container, 1)

    async def body(js, nc):
        holder = make_relay(container, nc, database_url)
        await holder.relay_once()  # takes the lease and keeps it
        try:
            with pytest.raises(NeverLeasedError, match="another relay runs"):
                await relay_all(make_relay(container, nc, database_url))
        finally:
            await holder.release()
        await relay_all(make_relay(container, nc, database_url))  # free: it runs
        return len(await stream_messages(js))

    assert run(with_js(nats_url, body)) == 2  # LessonScheduled, EnrollmentConfirmed
