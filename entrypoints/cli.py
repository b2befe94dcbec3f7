"""The `club` command line (README.md, "Operating it")."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from urllib.parse import urlsplit

from adapters.crash import check_crash_setting
from adapters.nats.streams import CredentialsRefusedError, ReplicasSettingError
from entrypoints import bootstrap, demo, dlq, maintenance, status, trace
from entrypoints.logging_setup import LogFormatError, configure_logging, log_format
from entrypoints.masking import masked
from entrypoints.sandbox.email_knobs import EMAIL_KNOBS
from entrypoints.sandbox.knobs import add_knob_arguments, knobs_from
from entrypoints.sandbox.payment_knobs import PAYMENT_KNOBS
from entrypoints.settings import (
    DEFAULT_EMAIL_PROVIDER_URL,
    SMTP_SCHEMES,
    ConfigError,
    Settings,
)
from entrypoints.work_classes import WORK_CLASSES


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
    """The one logging set-up (entrypoints/logging_setup.py); each line names the
    process by its command: "api", "projector rosters", "status"."""
    role: list[str] = []
    for word in words[:2]:
        if word.startswith("-"):
            break
        role.append(word)
    configure_logging(" ".join(role) or "club", log_format(os.environ))


_mask_passwords_in_logs = _configure_logs  # the name tests/e2e/test_cli_errors.py uses


def _up(settings: Settings, _: argparse.Namespace) -> int:
    from entrypoints.supervisor import up

    return up(settings)


def _migrate(settings: Settings, _: argparse.Namespace) -> int:
    bootstrap.migrate(*settings.require_services(), settings.retention.streams())
    print("club: database and streams are up to date")
    return 0


def _api(settings: Settings, args: argparse.Namespace) -> int:
    from entrypoints.api_workers import api_workers
    from entrypoints.roles import run_api

    chosen = None if args.workers is None else str(args.workers)
    workers = None if chosen is None else api_workers({"CLUB_API_WORKERS": chosen})
    run_api(settings, workers)
    return 0


def _relay(settings: Settings, _: argparse.Namespace) -> int:
    from entrypoints.roles import run_relay

    run_relay(settings)
    return 0


def _projector(settings: Settings, args: argparse.Namespace) -> int:
    from entrypoints.roles import run_projector

    run_projector(settings, args.name)
    return 0


def _worker(settings: Settings, args: argparse.Namespace) -> int:
    from entrypoints.roles import run_worker

    run_worker(settings, args.name)
    return 0


def _saga(settings: Settings, _: argparse.Namespace) -> int:
    from entrypoints.roles import run_saga

    run_saga(settings)
    return 0


def _trim(settings: Settings, args: argparse.Namespace) -> int:
    from entrypoints.roles import run_trim

    run_trim(settings, once=args.once)
    return 0


def _payment_sandbox(settings: Settings, args: argparse.Namespace) -> int:
    """Listens where CLUB_PAYMENT_PROVIDER_URL points; signs its webhooks to the
    API's /webhooks/payment with CLUB_PAYMENT_WEBHOOK_SECRET."""
    from entrypoints.sandbox.payment import check_webhook_target, run_payment_sandbox

    where = urlsplit(settings.payment_provider_url)
    host = settings.http_host if settings.http_host != "0.0.0.0" else "127.0.0.1"  # noqa: S104
    webhook_url = (
        args.webhook_url or f"http://{host}:{settings.http_port}/webhooks/payment"
    )
    try:
        check_webhook_target(webhook_url, settings.payment_webhook_secret)
    except ValueError as e:
        raise ConfigError(f"{e} (set CLUB_PAYMENT_WEBHOOK_SECRET)") from None
    run_payment_sandbox(
        where.hostname or "127.0.0.1",
        where.port or 80,
        settings.data_dir / "sandbox" / "payment",
        knobs_from(args, PAYMENT_KNOBS),
        webhook_url,
        settings.payment_webhook_secret,
    )
    return 0


def _email_sandbox(settings: Settings, args: argparse.Namespace) -> int:
    """Listens where CLUB_EMAIL_PROVIDER_URL points, so workers find it."""
    from entrypoints.sandbox.email import run_email_sandbox

    where = urlsplit(settings.email_provider_url)
    if where.scheme in SMTP_SCHEMES:
        msg = (
            f"the e-mail sandbox plays an HTTP provider, and CLUB_EMAIL_PROVIDER_URL"
            f" names a mail server ({where.scheme}://): unset it, or set it to"
            f" {DEFAULT_EMAIL_PROVIDER_URL}"
        )
        raise ConfigError(msg)
    run_email_sandbox(
        where.hostname or "127.0.0.1",
        where.port or 80,
        settings.data_dir / "sandbox" / "email",
        knobs_from(args, EMAIL_KNOBS),
    )
    return 0


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
    sandbox = sub.add_parser("sandbox", help="a sandbox provider with fault knobs")
    sandboxes = sandbox.add_subparsers(required=True, metavar="PROVIDER")
    email = sandboxes.add_parser(
        "email", help="the e-mail provider, at CLUB_EMAIL_PROVIDER_URL"
    )
    add_knob_arguments(email, EMAIL_KNOBS)
    email.set_defaults(run=_email_sandbox)
    payment = sandboxes.add_parser(
        "payment", help="the payment provider, at CLUB_PAYMENT_PROVIDER_URL"
    )
    payment.add_argument(
        "--webhook-url",
        help="where signed webhooks go (default: this API's /webhooks/payment)",
    )
    add_knob_arguments(payment, PAYMENT_KNOBS)
    payment.set_defaults(run=_payment_sandbox)
    sub.add_parser(
        "saga", help="the purchase saga: deadlines, payments, refunds"
    ).set_defaults(run=_saga)
    trim = sub.add_parser(
        "trim", help="retention: old inbox rows, stored answers and export files"
    )
    trim.add_argument("--once", action="store_true", help="one pass, then exit")
    trim.set_defaults(run=_trim)
    demo.add_commands(sub)
    dlq.add_commands(sub)
    status.add_commands(sub)
    trace.add_commands(sub)
    return parser


if __name__ == "__main__":
    sys.exit(main())
