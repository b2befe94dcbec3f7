"""Publish the whole outbox once, then hand the lease on: a relay run to the end.

The relay role keeps running; a benchmark or a test that wants "everything there is
published, now" drives the same `Relay` this way instead.
"""

from __future__ import annotations

from adapters.nats.relay import Relay


class NeverLeasedError(RuntimeError):
    """The relay published nothing because another relay held the lease throughout."""


async def relay_all(relay: Relay) -> None:
    while await relay.relay_once():
        pass
    if relay.epoch is None:  # silence here would pass for "nothing to publish"
        msg = f"relay {relay.lease.name!r} never held the lease; another relay runs"
        raise NeverLeasedError(msg)
    await relay.release()
