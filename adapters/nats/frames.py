"""Protocol frames handed straight to nats-py's write buffer, one flush a batch.

`nc.publish` checks the subject and every header by regular expression and asks
its flusher for a flush on every call: for a batch of Club's own messages (the
relay's) or of acks (a consumer's), several times the Python of the frame itself.
Here each frame is checked once where it is built and the batch is written with one
flush. nats-py's private parts are used in this module only: the client's
`_send_command` (append to the write buffer) and `_flush_pending` (wake its flusher),
and a message's `_client`, `_check_reply` and `_ackd`, as its own `ack` uses them.

Nothing is written while the client reconnects: nats-py would keep it in a buffer
that grows with every retry and floods the server when it is back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import (
    ConnectionClosedError,
    ConnectionDrainingError,
    ConnectionReconnectingError,
)

SUBJECT = re.compile(r"[!-~]+")  # printable ASCII: one token of a frame's line
_EMPTY_ACK = b"PUB %s 0\r\n\r\n"  # an empty body acknowledges a JetStream message


def check_writable(nc: Client) -> None:
    if nc.is_closed:
        raise ConnectionClosedError
    if nc.is_draining_pubs:
        raise ConnectionDrainingError
    if not nc.is_connected:
        raise ConnectionReconnectingError


async def write(nc: Client, frames: Iterable[bytes]) -> None:
    """Every frame, in order, then one flush. The caller checked the client."""
    send = nc._send_command
    for frame in frames:
        await send(frame)
    await nc._flush_pending()


async def ack_all(msgs: Sequence[Msg]) -> None:
    """`msg.ack()` for each (all from one client), written as one batch; a message
    whose reply subject could not be one frame token (only the server sets it) is
    refused before anything is written."""
    if not msgs:
        return
    nc = msgs[0]._client
    check_writable(nc)
    replies = []
    for msg in msgs:
        msg._check_reply()  # a message acked twice is refused, as `ack` does
        if not SUBJECT.fullmatch(msg.reply):
            raise ValueError(f"a reply subject that is not one token: {msg.reply!r}")
        replies.append(msg.reply.encode())
    await write(nc, (_EMPTY_ACK % reply for reply in replies))
    for msg in msgs:
        msg._ackd = True
