"""The shell of an operator's one-shot look (`club status`, `club trace`): a small
container (opened by the composition root, handed in by the command line), NATS
within a budget, and a server that does not answer said in one line naming the
setting to check, exit 1 — never a traceback or a wait for ever."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import TypeVar

from nats.aio.client import Client
from nats.js import JetStreamContext

from adapters.nats.streams import connect
from adapters.transient import TRANSIENT
from application.ports import ConsoleReads
from entrypoints.config.container import Container
from entrypoints.config.masking import masked

CONNECT_BUDGET_S = 10.0  # an operator's look must answer, not wait for ever
T = TypeVar("T")
# A database URL in, a one-connection container out.
OpenContainer = Callable[[str], Container]
# A container and a JetStream context in, the console's reads out.
ReadsOf = Callable[[Container, JetStreamContext], ConsoleReads]


class UnreachableError(Exception):
    """A server did not answer; the message names the setting to check."""


class Unanswered:
    """The look failed for want of a server; it was said on stderr."""


UNANSWERED = Unanswered()


async def connect_within_budget(nats_url: str, name: str) -> Client:
    try:
        return await asyncio.wait_for(connect(nats_url, name=name), CONNECT_BUDGET_S)
    except TimeoutError:
        msg = (
            f"NATS at {masked(nats_url)} did not answer within "
            f"{CONNECT_BUDGET_S:.0f} s; check CLUB_NATS_URL and that the server runs"
        )
        raise UnreachableError(msg) from None


def read_once(
    command: str,
    open_container: OpenContainer,
    database_url: str,
    read: Callable[[Container], T],
) -> T | Unanswered:
    """`read` on a one-connection container, closed after; UNANSWERED (and one
    line on stderr) when the database or the broker does not answer."""
    container: Container | None = None
    try:
        container = open_container(database_url)  # connects: inside the try
        return read(container)
    except UnreachableError as e:
        sys.stderr.write(f"club {command}: {e}\n")
        return UNANSWERED
    except TRANSIENT as e:
        first_line = masked(str(e)).strip().splitlines()[:1] or [type(e).__name__]
        sys.stderr.write(
            f"club {command}: the database did not answer ({first_line[0]}); "
            "check CLUB_DATABASE_URL and that PostgreSQL runs\n"
        )
        return UNANSWERED
    finally:
        if container is not None:
            container.close()
