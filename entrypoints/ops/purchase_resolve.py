"""`club purchases resolve ID --refund|--confirm|--cancel --reason TEXT`: an operator
settles a purchase waiting in manual review.

The decision is recorded on the purchase as `ReviewResolved`, with the operator (the
login name, as `club dlq` audits its replays) and the reason; the saga carries on
from it: a refund under the payment's one key, access granted, or the seat released
with nothing charged. Only a purchase in manual review is resolved: in any other
state the saga still owns its next step, and the answer names the state.
"""

from __future__ import annotations

import argparse
import functools
import getpass
from datetime import UTC, datetime
from uuid import UUID

from application.errors import NotFoundError
from domain.errors import DomainError
from domain.purchase import Resolution
from entrypoints.config.container import Container
from entrypoints.config.settings import ConfigError, Settings
from entrypoints.ops.operator_command import OpenContainer
from entrypoints.ops.terminal import OperatorConsole

MAX_REASON = 500
WHAT_FOLLOWS = {
    Resolution.REFUND: "the saga refunds the payment under its refund key",
    Resolution.CONFIRM: "access is granted: the seat is the student's",
    Resolution.CANCEL: "the seat is released and nothing is charged",
}


def add_commands(
    purchases: argparse._SubParsersAction[argparse.ArgumentParser],
    open_container: OpenContainer,
) -> None:
    """`resolve` among `club purchases`' actions."""
    resolve = purchases.add_parser(
        "resolve", help="settle a purchase in manual review: refund, confirm, cancel"
    )
    resolve.add_argument("purchase_id", metavar="ID", help="the purchase's id")
    decision = resolve.add_mutually_exclusive_group(required=True)
    for choice in Resolution:
        decision.add_argument(
            f"--{choice.value}",
            dest="decision",
            action="store_const",
            const=choice,
            help=WHAT_FOLLOWS[choice],
        )
    resolve.add_argument(
        "--reason", required=True, metavar="TEXT", help="why, kept with the decision"
    )
    resolve.set_defaults(run=functools.partial(resolve_command, open=open_container))


def resolve_command(
    settings: Settings, args: argparse.Namespace, *, open: OpenContainer
) -> int:
    purchase_id = _purchase_id(args.purchase_id)
    reason = checked_reason(args.reason)
    decision: Resolution = args.decision
    database_url, _ = settings.operator_services()
    container = open(database_url)
    try:
        status = resolve(container, purchase_id, decision, reason, getpass.getuser())
    finally:
        container.close()
    OperatorConsole().print(
        f"purchase {purchase_id} resolved with --{decision.value}: {status}; "
        f"{WHAT_FOLLOWS[decision]}"
    )
    return 0


def resolve(
    container: Container,
    purchase_id: UUID,
    decision: Resolution,
    reason: str,
    operator: str,
) -> str:
    """The purchase's status after the decision; `ConfigError` naming the state
    or the decision that fits when it is refused."""
    try:
        view = container.app.resolve_review(
            purchase_id,
            decision=decision,
            operator=operator,
            reason=reason,
            now=datetime.now(UTC),
        )
    except NotFoundError:
        msg = f"no purchase {purchase_id}: check the id (GET /purchases/{{id}})"
        raise ConfigError(msg) from None
    except DomainError as error:  # not in review, a decision that does not fit
        raise ConfigError(f"{error} (only manual review is resolved)") from None
    return str(view.status)


def _purchase_id(text: str) -> UUID:
    try:
        return UUID(text.strip())
    except ValueError:
        raise ConfigError(f"ID is a purchase's UUID, not {text!r:.60}") from None


def checked_reason(text: str) -> str:
    """The reason kept with a decision, from the command line or the page."""
    reason = text.strip()
    if not reason or len(reason) > MAX_REASON:
        msg = f"--reason says why in 1-{MAX_REASON} characters"
        raise ConfigError(msg)
    if any(ord(c) < 32 or ord(c) == 127 for c in reason):  # noqa: PLR2004
        raise ConfigError("--reason must not hold control characters")
    return reason
