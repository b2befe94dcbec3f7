"""CPU of one relayed message in the client: nats-py's `publish` against the frame.

`python -m bench.publish_cost [MESSAGES] [ROUNDS]` publishes MESSAGES (default
50,000) messages shaped like the relay's (the subject, three headers, a 300-byte
body, a fast-ingest reply subject) into an embedded server at its default sync, once
with `nc.publish` and once as `HPUB` frames written by `BatchPublisher`'s own
`_frame` into the client's buffer with one flush, alternating, ROUNDS (default 3)
rounds; prints the process's CPU time per message, median of the rounds.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.scratch import scratch_dir
from adapters.nats.batch_publish import Outgoing, _frame
from adapters.nats.streams import connect

SUBJECT = "club.events.enrollment.confirmed"
HEADERS = {
    "Nats-Msg-Id": "0b7c1d2e-7e4f-4b8e-9c8a-0c2b8f0e6a11",
    "Club-Event-Type": "enrollment.confirmed",
    "Club-Schema-Version": "2",
}
BODY = b'{"data":"' + b"x" * 290 + b'"}'
REPLY = "_INBOX.relay.abcdefghijklmnop.0123456789abcdef.1000.fail."


async def rounds(url: str, messages: int, count: int) -> dict[str, list[float]]:
    nc = await connect(url, name="bench-publish-cost")
    message = Outgoing(SUBJECT, BODY, HEADERS, "CLUB_EVENTS")
    cpu: dict[str, list[float]] = {"nc.publish": [], "HPUB frames": []}
    for _ in range(count):
        started = time.process_time()
        for i in range(messages):
            await nc.publish(SUBJECT, BODY, reply=f"{REPLY}{i}.1.$FI", headers=HEADERS)
        await nc.flush()
        cpu["nc.publish"].append((time.process_time() - started) / messages)
        started = time.process_time()
        for i in range(messages):
            await nc._send_command(_frame(message, f"{REPLY}{i}.1.$FI"))
        await nc._flush_pending()
        await nc.flush()
        cpu["HPUB frames"].append((time.process_time() - started) / messages)
    await nc.close()
    return cpu


def main() -> None:
    messages = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    server = EmbeddedNats(
        scratch_dir("club-bench-publish-") / "nats", sync_always=False
    )
    server.start()
    try:
        cpu = asyncio.run(rounds(server.url, messages, count))
    finally:
        server.stop()
    for name, values in cpu.items():
        shown = ", ".join(f"{v * 1e6:.2f}" for v in values)
        median = statistics.median(values) * 1e6
        print(f"{name}: {median:.2f} µs CPU per message (rounds {shown})")


if __name__ == "__main__":
    main()
