"""Who may do what on the broker: one NATS user per role, least privilege.

Only the relay may publish on `club.events.>`: a published event is a fact every read
model applies, so anyone else who could publish there could forge one. A consumer may
create and pull its own durable, ack, and dead-letter into its own DLQ subject only
(a dead letter is handed back to the consumer it names when an operator replays it,
so one consumer writing another's would be a forged event for that one); the API
reads JetStream's state (readiness, status) and replays dead letters for the
operator's page; `admin` (migrations, audit, `club dlq`) manages streams but may not
publish events. Replies — and pulled messages — come back on the client's inbox:
each user has its own prefix (`_INBOX.<user>`, set by `streams.connect`) and may
subscribe there only, so no role reads another's replies or messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import attrs

from adapters.nats.dlq import replay_durable
from adapters.nats.streams import (
    DLQ_STREAM,
    EVENTS_STREAM,
    EVENTS_SUBJECTS,
    REPLAY_STREAM,
    REPLAY_SUBJECTS,
    dead_letter_subject,
    inbox_prefix,
)


def replies(user: str) -> str:
    return f"{inbox_prefix(user)}.>"


@attrs.frozen
class NatsUser:
    name: str
    publish: tuple[str, ...] = ()  # subjects it may publish on; () is none
    subscribe: tuple[str, ...] = ()
    publish_deny: tuple[str, ...] = ()


def admin_user() -> NatsUser:
    return NatsUser(
        "admin", publish=(">",), subscribe=(">",), publish_deny=(EVENTS_SUBJECTS,)
    )


def api_user() -> NatsUser:
    """Readiness and status read JetStream's state; the operator's page replays a
    dead letter: hands it back on CLUB_REPLAY, then deletes it from the DLQ. It may
    publish no event and no dead letter."""
    reads = (
        "$JS.API.INFO",
        "$JS.API.STREAM.INFO.*",
        "$JS.API.CONSUMER.INFO.*.*",
        f"$JS.API.STREAM.MSG.GET.{DLQ_STREAM}",  # the DLQ's oldest entries (metrics)
        f"$JS.API.STREAM.MSG.GET.{EVENTS_STREAM}",  # oldest unacked event (status)
    )
    replay = (REPLAY_SUBJECTS, f"$JS.API.STREAM.MSG.DELETE.{DLQ_STREAM}")
    return NatsUser("api", publish=(*reads, *replay), subscribe=(replies("api"),))


def relay_user() -> NatsUser:
    # A PubAck is the reply to the publish itself: no JetStream API is needed.
    # It also dead-letters the stored events it cannot map (club.dlq.relay).
    return NatsUser(
        "relay",
        publish=(EVENTS_SUBJECTS, dead_letter_subject("relay")),
        subscribe=(replies("relay"),),
    )


def consumer_user(durable: str) -> NatsUser:
    """A projector or worker: its own durable on CLUB_EVENTS, its replay durable on
    CLUB_REPLAY (what `club dlq replay` hands back to it), and its own DLQ subject."""
    api = "$JS.API.CONSUMER"
    own = (f"{EVENTS_STREAM}.{durable}", f"{REPLAY_STREAM}.{replay_durable(durable)}")
    pulls = [
        right
        for durable_on_stream in own
        for right in (
            f"{api}.CREATE.{durable_on_stream}",  # ensure_consumer at start-up
            f"{api}.CREATE.{durable_on_stream}.>",  # the same with its filter
            f"{api}.DURABLE.CREATE.{durable_on_stream}",
            f"{api}.INFO.{durable_on_stream}",
            f"{api}.MSG.NEXT.{durable_on_stream}",  # a pull
            f"$JS.ACK.{durable_on_stream}.>",  # ack, nak, term of what it pulled
        )
    ]
    user = f"consumer-{durable}"
    return NatsUser(
        user,
        publish=(*pulls, dead_letter_subject(durable)),
        subscribe=(replies(user),),
    )


def role_users(consumers: Iterable[str]) -> list[NatsUser]:
    return [admin_user(), api_user(), relay_user(), *map(consumer_user, consumers)]


def authorization_block(users: Iterable[NatsUser], passwords: Mapping[str, str]) -> str:
    """nats-server's `authorization {}`; `passwords` maps a user to a quoted
    password, or to an unquoted `$VARIABLE` the server reads from its environment."""
    lines = ["authorization {", "  users: ["]
    for user in users:
        publish = _permission(user.publish, user.publish_deny)
        subscribe = _permission(user.subscribe, ())
        lines.append(
            f"    {{user: {json.dumps(user.name)}, password: {passwords[user.name]},"
            f" permissions: {{publish: {publish}, subscribe: {subscribe}}}}}"
        )
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def _permission(allow: tuple[str, ...], deny: tuple[str, ...]) -> str:
    # An empty allow list would allow everything: say "deny all" instead.
    if not allow:
        return '{deny: [">"]}'
    text = f"allow: {json.dumps(list(allow))}"
    if deny:
        text += f", deny: {json.dumps(list(deny))}"
    return f"{{{text}}}"
