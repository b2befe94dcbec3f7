"""Stream and consumer definitions (docs/events.md), created idempotently."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

import attrs
import nats
import structlog
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import APIError, NotFoundError

log = structlog.get_logger()

EVENTS_STREAM = "CLUB_EVENTS"
EVENTS_SUBJECTS = "club.events.>"
DLQ_STREAM = "CLUB_DLQ"
DLQ_SUBJECTS = "club.dlq.>"


def inbox_prefix(user: str | None) -> str:
    """Where a client's replies and pulled messages arrive: under its user's own
    prefix, the only inbox its user may read (adapters/nats/authorization.py)."""
    return f"_INBOX.{user}" if user else "_INBOX"


def dead_letter_subject(consumer: str) -> str:
    """Where `consumer`'s dead letters go, and the only DLQ subject it may write."""
    return f"club.dlq.{consumer}"


# What `club dlq replay` hands back, one subject per consumer (adapters/nats/dlq.py).
REPLAY_STREAM = "CLUB_REPLAY"
REPLAY_SUBJECTS = "club.replay.>"
DUPLICATE_WINDOW_S = 120.0
ACK_WAIT_S = 30.0
# Deliveries of a message that fails with a bug (a poison event, a job's error)
# before it is dead-lettered: the consumers' and the job workers' alike.
POISON_ATTEMPTS = 5

STREAMS = (
    StreamConfig(
        name=EVENTS_STREAM,
        subjects=[EVENTS_SUBJECTS],
        storage=StorageType.FILE,
        duplicate_window=DUPLICATE_WINDOW_S,
        # The relay's fast-ingest batches (adapters/nats/batch_publish.py). A
        # broker older than 2.14 ignores the setting (2.9) or refuses the field
        # (2.12, 2.13: the stream is then made without it); either way the
        # relay takes one PubAck a message.
        allow_batched=True,
    ),
    StreamConfig(
        name=DLQ_STREAM,
        subjects=[DLQ_SUBJECTS],
        storage=StorageType.FILE,
        duplicate_window=DUPLICATE_WINDOW_S,
    ),
    StreamConfig(
        name=REPLAY_STREAM,
        subjects=[REPLAY_SUBJECTS],
        storage=StorageType.FILE,
        duplicate_window=DUPLICATE_WINDOW_S,
    ),
)


@attrs.frozen(kw_only=True)
class StreamRetention:
    """JetStream's `max_age` for each stream, in seconds (CLUB_STREAM_RETENTION,
    CLUB_DLQ_RETENTION): the broker drops older messages itself."""

    events_s: float
    dead_letters_s: float  # CLUB_DLQ, and CLUB_REPLAY where replays wait

    def max_age_of(self, stream: str) -> float:
        return self.events_s if stream == EVENTS_STREAM else self.dead_letters_s


class CredentialsRefusedError(Exception):
    """The broker refused the user and password: waiting will not change that."""


async def connect(url: str, name: str) -> Client:
    """A client that waits out a broker restart, but fails at once on credentials
    the broker refuses, which nats-py would otherwise retry for ever."""
    refused: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def on_error(error: Exception) -> None:
        if "authorization violation" in str(error).lower() and not refused.done():
            refused.set_exception(CredentialsRefusedError(str(error)))
        log.warning("nats.error", client=name, error=str(error))

    servers = [s.strip() for s in url.split(",")]
    user = urlsplit(servers[0]).username
    connecting: asyncio.Future[Client] = asyncio.ensure_future(
        nats.connect(
            servers=servers,
            name=name,
            inbox_prefix=inbox_prefix(unquote(user) if user else None),
            max_reconnect_attempts=-1,  # a broker restart is waited out, not fatal
            reconnect_time_wait=0.5,
            connect_timeout=5,
            error_cb=on_error,
        )
    )
    either: set[asyncio.Future[Any]] = {connecting, refused}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:  # the caller gave up waiting: so does the client
        connecting.cancel()
        refused.cancel()
        raise
    if not connecting.done():
        connecting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await connecting
        refused.result()  # raises CredentialsRefusedError
    if refused.done():
        refused.exception()  # refused as it connected: the client retries alone
    else:
        refused.cancel()  # a later refusal (after a reconnect) is only logged
    return connecting.result()


class ReplicasSettingError(ValueError):
    """CLUB_NATS_REPLICAS is not a count the broker can keep; says how to fix it."""


REPLICAS_VARIABLE = "CLUB_NATS_REPLICAS"
MAX_REPLICAS = 5  # JetStream's own limit
REPLICAS_UNSUPPORTED = 10074  # "replicas > 1 not supported in non-clustered mode"


def configured_replicas(environ: Mapping[str, str] = os.environ) -> int | None:
    """How many servers keep each stream (`CLUB_NATS_REPLICAS`: 3 on a three-node
    cluster); None when unset."""
    raw = environ.get(REPLICAS_VARIABLE, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_REPLICAS:
        msg = (
            f"{REPLICAS_VARIABLE}={raw!r} must be a whole number from 1 to "
            f"{MAX_REPLICAS}: 1 for a single NATS server, 3 for a three-node cluster"
        )
        raise ReplicasSettingError(msg)
    return int(raw)


class ReplicasRefusedError(ReplicasSettingError):
    """The broker cannot keep the streams on as many servers as configured."""


async def ensure_streams(
    js: JetStreamContext,
    replicas: int | None = None,
    retention: StreamRetention | None = None,
) -> None:
    """Create or update Club's streams with `replicas` (else CLUB_NATS_REPLICAS)
    and `retention`. Unset, a new stream gets 1 replica and no age limit, and an
    existing one keeps its count and its age limit, so a process started without
    them never shrinks a cluster's streams nor changes what they keep."""
    wanted = replicas or configured_replicas()
    for config in STREAMS:
        name = str(config.name)
        max_age = None if retention is None else retention.max_age_of(name)
        try:
            info = await js.stream_info(name)
        except NotFoundError:
            wanted_config = _configured(config, wanted or 1, max_age)
            await _without_fields_unknown_to_the_broker(js.add_stream, wanted_config)
        else:
            kept = info.config.num_replicas or 1
            wanted_config = _configured(
                config, wanted or kept, max_age or info.config.max_age
            )
            await _without_fields_unknown_to_the_broker(js.update_stream, wanted_config)


async def _without_fields_unknown_to_the_broker(
    request: Callable[[StreamConfig], Awaitable[object]], config: StreamConfig
) -> None:
    """NATS 2.12 and 2.13 refuse a field they do not know (`allow_batched`, new
    in 2.14): the stream is made without it rather than not at all."""
    try:
        await _refused_as_config(request(config))
    except APIError as e:
        if not config.allow_batched or "allow_batched" not in str(e.description):
            raise
        log.warning("nats.fast_ingest_unsupported", stream=config.name)
        await _refused_as_config(
            request(dataclasses.replace(config, allow_batched=None))
        )


async def _refused_as_config(request: Awaitable[object]) -> None:
    # The server's refusal reads `ServerError()` in a traceback; name the setting.
    try:
        await request
    except APIError as e:
        if e.err_code != REPLICAS_UNSUPPORTED and "replica" not in str(e.description):
            raise
        msg = (
            f"NATS cannot keep Club's streams with the replicas asked for "
            f"({e.description}): on a single server unset {REPLICAS_VARIABLE} or "
            f"set it to 1; for 3, run a JetStream cluster of at least 3 nodes"
        )
        raise ReplicasRefusedError(msg) from e


def _configured(
    config: StreamConfig, replicas: int, max_age: float | None
) -> StreamConfig:
    return dataclasses.replace(config, num_replicas=replicas, max_age=max_age)


async def ensure_consumer(
    js: JetStreamContext,
    durable: str,
    *,
    ack_wait: float = ACK_WAIT_S,
    stream: str = EVENTS_STREAM,
    filter_subject: str = EVENTS_SUBJECTS,
    max_ack_pending: int = 10_000,
) -> None:
    """A durable pull consumer (by default over every event), acked one by one
    after the effect commits."""
    config = ConsumerConfig(
        durable_name=durable,
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL,
        filter_subject=filter_subject,
        ack_wait=ack_wait,
        max_ack_pending=max_ack_pending,
    )
    await js.add_consumer(stream, config)
