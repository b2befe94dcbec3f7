"""Relay throughput, and nats-py publishing the same envelopes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from uuid import uuid4

from nats.js.errors import NotFoundError

from adapters.nats.relay import event_message
from adapters.nats.relay_drain import relay_all
from adapters.nats.streams import EVENTS_STREAM, connect, ensure_streams
from application.contracts.envelope import Envelope
from entrypoints.config.settings import Settings
from entrypoints.runtime.bootstrap import build_relay
from entrypoints.runtime.role_loop import run_on_role_loop


async def fresh_stream(js, replicas: int = 1) -> None:
    with contextlib.suppress(NotFoundError):  # absent is fine
        await js.delete_stream(EVENTS_STREAM)
    await ensure_streams(js, replicas)
    if replicas > 1:
        await lead_from_another_node(js)


async def lead_from_another_node(js) -> None:
    """A new stream's leader lands on any node, and whether the client's node
    leads moved a run's rate by a quarter. Every run places it the same way: on a
    node other than the client's (its messages cross a route, as for two clients
    in three in production), the first such by name."""
    nc = js._nc
    here = nc._server_info["server_name"]
    for _ in range(20):
        info = await js.stream_info(EVENTS_STREAM)
        if info.cluster is None or info.cluster.leader is None:
            await asyncio.sleep(0.2)  # not elected yet
            continue
        nodes = sorted(
            {info.cluster.leader, *(r.name for r in info.cluster.replicas or [])}
        )
        wanted = next(n for n in nodes if n != here)
        if info.cluster.leader == wanted:
            return
        await nc.request(
            f"$JS.API.STREAM.LEADER.STEPDOWN.{EVENTS_STREAM}",
            json.dumps({"placement": {"preferred": wanted}}).encode(),
            timeout=5,
        )
        await asyncio.sleep(0.5)
    raise RuntimeError(f"the stream's leader could not be placed off {here}")


def relay_once(container, database_url: str, nats_url: str, replicas: int = 1) -> float:
    """The whole outbox into a fresh stream, once (what a consumer then reads)."""
    settings = Settings.from_env(
        {"CLUB_DATABASE_URL": database_url, "CLUB_NATS_URL": nats_url}
    )
    return run_on_role_loop(_relay_all(container, settings, nats_url, replicas))


async def _relay_all(
    container, settings: Settings, nats_url: str, replicas: int
) -> float:
    nc = await connect(nats_url, name="bench-relay")
    js = nc.jetstream()
    await fresh_stream(js, replicas)
    # A lease of its own each run, so each run publishes the whole outbox again.
    relay = build_relay(settings, container, nc, name=f"bench-{uuid4().hex[:6]}")
    start = time.perf_counter()
    await relay_all(relay)
    elapsed = time.perf_counter() - start
    count = (await js.stream_info(EVENTS_STREAM)).state.messages
    await nc.close()
    return count / elapsed


def raw_publish_once(
    envelopes: list[Envelope], nats_url: str, replicas: int = 1
) -> float:
    # The very messages the relay sends: subject, body and headers.
    prepared = [
        (m.subject, m.payload, m.headers) for m in map(event_message, envelopes)
    ]

    async def one() -> float:
        nc = await connect(nats_url, name="bench-raw")
        js = nc.jetstream()
        await fresh_stream(js, replicas)
        start = time.perf_counter()
        for i in range(0, len(prepared), 500):
            futures = [
                await js.publish_async(s, b, headers=h)
                for s, b, h in prepared[i : i + 500]
            ]
            await asyncio.gather(*futures)
        elapsed = time.perf_counter() - start
        await nc.close()
        return len(prepared) / elapsed

    return run_on_role_loop(one())
