"""Pull subscriptions whose `fetch` takes a message already received at once.

nats-py's `fetch` takes each message of a batch through `Subscription.next_msg`,
which names a task with a fresh uuid4 and starts it to run `asyncio.wait_for` (a
second task), even for a message already waiting in the subscription's queue: about
50 µs a message on the 2-core machine of docs/benchmarks.md, more than the consumer's
own Python for it. A subscription bound here takes a queued message the way
`next_msg` ends up taking it (the queue's head, the pending bytes counted down, the
queue told it is done); an empty queue, a closed connection or a callback
subscription go to the library's `next_msg` unchanged, with its timeouts and errors.

nats-py's private parts are used in this module only: a pull subscription's `_sub`,
and that subscription's `_pending_queue`, `_pending_size`, `_conn` and `_cb`.
"""

from __future__ import annotations

from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext


async def bind_pull(
    js: JetStreamContext, *, durable: str, stream: str
) -> JetStreamContext.PullSubscription:
    """`js.pull_subscribe_bind(durable=, stream=)`, taking queued messages first."""
    sub = await js.pull_subscribe_bind(durable=durable, stream=stream)
    takes_queued_first(sub._sub)
    return sub


def takes_queued_first(sub: Subscription) -> None:
    """This subscription's `next_msg` returns a queued message without a task."""
    library_next_msg = sub.next_msg

    async def next_msg(timeout: float | None = 1.0) -> Msg:
        queue = sub._pending_queue
        if queue.empty() or sub._conn.is_closed or sub._cb:
            return await library_next_msg(timeout)
        msg = queue.get_nowait()
        sub._pending_size -= len(msg.data)
        queue.task_done()
        return msg

    # On the instance: `fetch` calls `self._sub.next_msg`, and no other
    # subscription of the process changes.
    setattr(sub, "next_msg", next_msg)  # noqa: B010 - mypy refuses assigning a method
