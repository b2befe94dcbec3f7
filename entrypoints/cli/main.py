"""The `club` command line (README.md, "Operating it")."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

from adapters.crash import check_crash_setting
from adapters.nats.streams import CredentialsRefusedError, ReplicasSettingError
from entrypoints.cli import demo, maintenance, token
from entrypoints.config.catalogue import WORK_CLASSES
from entrypoints.config.logging_setup import (
    LogFormatError,
    configure_logging,
    log_format,
)
from entrypoints.config.masking import masked
from entrypoints.config.settings import (
    ConfigError,
    Settings,
    stream_retention,
)
from entrypoints.ops import dlq, purchase_resolve, status, trace, work_lists
from entrypoints.runtime import bootstrap

# Commands another installed package adds (pyproject.toml's entry points): the
# sandboxes' `club sandbox`, which production code never imports.
PLUGINS = "club.commands"


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    # Only a setting's mistake is a one-line answer; anything else is a bug whose
    # traceback the operator needs, so it propagates.
    try:
        _configure_logs(sys.argv[1:] if argv is None else argv)
        _check_crash_setting()
        settings = Settings.from_env()
        return int(args.run(settings, args) or 0)
    except (ConfigError, ReplicasSettingError, LogFormatError) as e:
        print(f"club: {masked(str(e))}", file=sys.stderr)
        return 2
    except CredentialsRefusedError:
        print(
            "club: NATS refused the user and password in CLUB_NATS_URL "
            "(nats://user:password@host:port); `club up` keeps each role's in "
            "CLUB_DATA_DIR/nats/credentials.json",
            file=sys.stderr,
        )
        return 2


def _check_crash_setting() -> None:
    try:
        check_crash_setting()
    except ValueError as e:
        raise ConfigError(str(e)) from None


def _configure_logs(words: Sequence[str] = ()) -> None:
    """The one logging set-up (entrypoints/config/logging_setup.py); each line names the
    process by its command: "api", "projector rosters", "status"."""
    role: list[str] = []
    for word in words[:2]:
        if word.startswith("-"):
            break
        role.append(word)
    configure_logging(" ".join(role) or "club", log_format(os.environ))


_mask_passwords_in_logs = _configure_logs  # the name tests/e2e/test_cli_errors.py uses


def _up(settings: Settings, _: argparse.Namespace) -> int:
    from entrypoints.runtime.supervisor import up

    return up(settings)


def _migrate(settings: Settings, _: argparse.Namespace) -> int:
    bootstrap.migrate(
        *settings.require_services(), stream_retention(settings.retention)
    )
    print("club: database and streams are up to date")
    return 0


def _api(settings: Settings, args: argparse.Namespace) -> int:
    from entrypoints.runtime.api_workers import api_workers
    from entrypoints.runtime.roles import run_api

    chosen = None if args.workers is None else str(args.workers)
    workers = None if chosen is None else api_workers({"CLUB_API_WORKERS": chosen})
    run_api(settings, workers)
    return 0


def _relay(settings: Settings, _: argparse.Namespace) -> int:
    from entrypoints.runtime.roles import run_relay

    run_relay(settings)
    return 0


def _projector(settings: Settings, args: argparse.Namespace) -> int:
    from entrypoints.runtime.roles import run_projector

    run_projector(settings, args.name)
    return 0


def _worker(settings: Settings, args: argparse.Namespace) -> int:
    from entrypoints.runtime.roles import run_worker

    run_worker(settings, args.name)
    return 0


def _saga(settings: Settings, _: argparse.Namespace) -> int:
    from entrypoints.runtime.roles import run_saga

    run_saga(settings)
    return 0


def _trim(settings: Settings, args: argparse.Namespace) -> int:
    from entrypoints.runtime.roles import run_trim

    run_trim(settings, once=args.once)
    return 0


def _operator_container(database_url: str) -> bootstrap.Container:
    """An operator's look needs one connection, not a role's pool."""
    return bootstrap.build(database_url, pool_size=1)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="club", description=__doc__)
    sub = parser.add_subparsers(required=True, metavar="COMMAND")
    sub.add_parser("up", help="every role in one supervised process tree").set_defaults(
        run=_up
    )
    sub.add_parser("migrate", help="tables, streams and consumers").set_defaults(
        run=_migrate
    )
    api = sub.add_parser("api", help="the HTTP API")
    api.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="API processes on one port (default: CLUB_API_WORKERS, else 1)",
    )
    api.set_defaults(run=_api)
    relay = sub.add_parser("relay", help="outbox -> JetStream")
    relay.set_defaults(run=_relay)
    relay_sub = relay.add_subparsers(required=False, metavar="ACTION")
    rewind = relay_sub.add_parser(
        "rewind", help="republish from notification id N on (N included)"
    )
    rewind.add_argument(
        "--to",
        type=int,
        required=True,
        metavar="N",
        help="the first notification id to publish again (`club audit` names it)",
    )
    rewind.set_defaults(run=maintenance.relay_rewind)
    sub.add_parser(
        "audit", help="events up to the relay position that a consumer never saw"
    ).set_defaults(run=maintenance.audit)
    projector = sub.add_parser("projector", help="one read-model projection")
    projector.add_argument("name", choices=sorted(bootstrap.PROJECTIONS))
    projector.set_defaults(run=_projector)
    projections = sub.add_parser("projections", help="read-model maintenance")
    projections_sub = projections.add_subparsers(required=True, metavar="ACTION")
    rebuild = projections_sub.add_parser(
        "rebuild", help="rebuild from the start of the event store, then switch"
    )
    rebuild.add_argument("name", choices=sorted(bootstrap.PROJECTIONS))
    rebuild.set_defaults(run=maintenance.rebuild)
    worker = sub.add_parser("worker", help="a worker of one work class")
    worker.add_argument("name", choices=sorted(WORK_CLASSES))
    worker.set_defaults(run=_worker)
    sub.add_parser(
        "saga", help="the purchase saga: deadlines, payments, refunds"
    ).set_defaults(run=_saga)
    trim = sub.add_parser(
        "trim", help="retention: old inbox rows, stored answers and export files"
    )
    trim.add_argument("--once", action="store_true", help="one pass, then exit")
    trim.set_defaults(run=_trim)
    demo.add_commands(sub)
    token.add_commands(sub)
    dlq.add_commands(sub, _operator_container, bootstrap.dead_letter_queue)
    status.add_commands(sub, _operator_container, bootstrap.console_reads)
    trace.add_commands(sub, _operator_container, bootstrap.console_reads)
    work = work_lists.add_commands(sub, _operator_container, bootstrap.work_lists)
    purchase_resolve.add_commands(work["purchases"], _operator_container)
    for plugin in entry_points(group=PLUGINS):
        plugin.load()(sub)
    return parser


if __name__ == "__main__":
    sys.exit(main())
