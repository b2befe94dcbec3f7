"""`club sandbox email|payment`: the sandbox providers' commands, added to `club`
through the `club.commands` entry point (production code never imports them)."""

from __future__ import annotations

import argparse
from urllib.parse import urlsplit

from entrypoints.config.settings import (
    DEFAULT_EMAIL_PROVIDER_URL,
    SMTP_SCHEMES,
    ConfigError,
    Settings,
)
from sandboxes.email_knobs import EMAIL_KNOBS
from sandboxes.knobs import add_knob_arguments, knobs_from
from sandboxes.payment_knobs import PAYMENT_KNOBS


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sandbox = sub.add_parser("sandbox", help="a sandbox provider with fault knobs")
    providers = sandbox.add_subparsers(required=True, metavar="PROVIDER")
    email = providers.add_parser(
        "email", help="the e-mail provider, at CLUB_EMAIL_PROVIDER_URL"
    )
    add_knob_arguments(email, EMAIL_KNOBS)
    email.set_defaults(run=_email_sandbox)
    payment = providers.add_parser(
        "payment", help="the payment provider, at CLUB_PAYMENT_PROVIDER_URL"
    )
    payment.add_argument(
        "--webhook-url",
        help="where signed webhooks go (default: this API's /webhooks/payment)",
    )
    add_knob_arguments(payment, PAYMENT_KNOBS)
    payment.set_defaults(run=_payment_sandbox)


def _payment_sandbox(settings: Settings, args: argparse.Namespace) -> int:
    """Listens where CLUB_PAYMENT_PROVIDER_URL points; signs its webhooks to the
    API's /webhooks/payment with CLUB_PAYMENT_WEBHOOK_SECRET."""
    from sandboxes.payment import check_webhook_target, run_payment_sandbox

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
    from sandboxes.email import run_email_sandbox

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
