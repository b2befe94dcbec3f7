"""CLUB_* configuration (README.md, "Configuration"), read once at start-up."""

from __future__ import annotations

import math
import os
import re
import secrets
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import attrs

from adapters.nats.streams import DUPLICATE_WINDOW_S, StreamRetention
from adapters.providers.http_client import check_proxy
from application import retention
from application.console_reads import DEFAULT_KEY_LIFETIME_S
from application.contracts.events import READERS
from application.dlq_owners import RELAY_DLQ, DlqOwners, OwnerRulesError
from application.retention import Retention, RetentionError
from application.saga import SagaPolicy
from entrypoints.config.auth_settings import AuthSettingError, AuthSettings
from entrypoints.config.catalogue import CONSUMERS
from entrypoints.config.exposure import (
    DEFAULT_RATE,
    default_hosts,
    parse_hosts,
    parsed_rate,
)
from entrypoints.config.masking import masked
from entrypoints.config.provider_outage import (
    OutageSettingError,
    ProviderOutage,
    provider_outage,
)
from entrypoints.config.running import running_beside


class ConfigError(ValueError):
    """A setting is malformed; the message says which and how to fix it."""


@attrs.frozen(kw_only=True)
class Settings:
    database_url: str | None  # None: start an embedded server
    nats_url: str | None
    data_dir: Path
    http_host: str
    http_port: int
    operator_token: str
    hold_seconds: int
    # http(s):// the provider's API (by default the sandbox `club up` starts);
    # smtp:// or smtp+starttls:// a mail server (entrypoints/runtime/provider_urls.py).
    email_provider_url: str
    email_sender: str  # From: of what goes out over SMTP; "" with an HTTP provider
    email_rate_per_s: float  # the provider's limit: workers pace themselves under it
    notify_max_attempts: int
    export_max_age_seconds: float
    promise_seconds: float  # the confirmation e-mail's promised delivery time
    # Tuning, mostly for tests that need faults to resolve quickly:
    relay_lease_seconds: float
    ack_wait_seconds: float
    request_deadline_seconds: float
    # The purchase saga and its payment provider:
    payment_provider_url: str  # the sandbox `club up` starts, unless set
    payment_webhook_secret: str  # "" refuses every webhook; `club up` makes one
    saga_lease_seconds: float
    saga_poll_seconds: float
    saga_policy: SagaPolicy
    # A background role's own /metrics: None (unset) or 0 serves none; `club up`
    # gives each role a port of its own (entrypoints/runtime/metrics_server.py).
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = None
    # Who answers for each consumer's dead letters (CLUB_DLQ_OWNERS).
    dlq_owners: DlqOwners = attrs.Factory(DlqOwners)
    # How long each store keeps what it holds, tied together (application/retention.py).
    retention: Retention = attrs.Factory(Retention)
    # How callers prove who they are (CLUB_AUTH_*; config/auth_settings.py).
    auth: AuthSettings = attrs.Factory(AuthSettings)
    rate_limit: str = DEFAULT_RATE  # per caller (entrypoints/http/rate_limit.py)
    # Where browsers reach the API (behind a proxy, its https:// address): the
    # operator page's Origin check and Secure cookie follow it. "": as asked.
    public_url: str = ""
    # Proxies whose X-Forwarded-For/-Proto are believed (uvicorn's
    # forwarded_allow_ips); "" believes nobody's.
    trusted_proxies: str = ""
    allowed_hosts: frozenset[str] = attrs.Factory(lambda: default_hosts("127.0.0.1"))
    # How long the e-mail provider remembers an idempotency key: a notification's
    # dead letter first failed longer ago is held back from a replay (may send twice).
    email_key_lifetime_s: float = DEFAULT_KEY_LIFETIME_S
    # The e-mail provider's circuit and the time bound of a message's retries
    # (entrypoints/config/provider_outage.py).
    outage: ProviderOutage = attrs.Factory(ProviderOutage)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        sender = _sender(env.get("CLUB_EMAIL_FROM", ""))
        return cls(
            database_url=_database_url(env.get("CLUB_DATABASE_URL") or None),
            nats_url=_nats_url(env.get("CLUB_NATS_URL") or None),
            data_dir=Path(env.get("CLUB_DATA_DIR", ".club")).absolute(),
            http_host=env.get("CLUB_HTTP_HOST", "127.0.0.1"),
            http_port=_port(env, "CLUB_HTTP_PORT", 8000),
            operator_token=_operator_token(env.get("CLUB_OPERATOR_TOKEN") or None),
            hold_seconds=_int(env, "CLUB_HOLD_SECONDS", 900),
            email_provider_url=_email_url(
                env.get("CLUB_EMAIL_PROVIDER_URL") or DEFAULT_EMAIL_PROVIDER_URL,
                sender,
            ),
            email_sender=sender,
            email_rate_per_s=_number(env, "CLUB_EMAIL_RATE_PER_S", 100, "per second"),
            notify_max_attempts=_positive_int(env, "CLUB_NOTIFY_MAX_ATTEMPTS", 10),
            export_max_age_seconds=_number(env, "CLUB_EXPORT_MAX_AGE_SECONDS", 300),
            promise_seconds=_number(env, "CLUB_PROMISE_SECONDS", 10),
            relay_lease_seconds=_number(env, "CLUB_RELAY_LEASE_SECONDS", 10),
            ack_wait_seconds=_number(env, "CLUB_ACK_WAIT_SECONDS", 30),
            request_deadline_seconds=_number(env, "CLUB_REQUEST_DEADLINE_SECONDS", 5),
            payment_provider_url=_http_url(
                "CLUB_PAYMENT_PROVIDER_URL",
                env.get("CLUB_PAYMENT_PROVIDER_URL") or DEFAULT_PAYMENT_PROVIDER_URL,
            ),
            payment_webhook_secret=env.get("CLUB_PAYMENT_WEBHOOK_SECRET", ""),
            saga_lease_seconds=_number(env, "CLUB_SAGA_LEASE_SECONDS", 30),
            saga_poll_seconds=_number(env, "CLUB_SAGA_POLL_SECONDS", 0.5),
            saga_policy=_saga_policy(env),
            metrics_host=env.get("CLUB_METRICS_HOST") or "127.0.0.1",
            metrics_port=_optional_port(env, "CLUB_METRICS_PORT"),
            dlq_owners=_dlq_owners(env.get("CLUB_DLQ_OWNERS", "")),
            auth=_auth(env),
            rate_limit=_rate(env.get("CLUB_RATE_LIMIT") or DEFAULT_RATE),
            public_url=_public_url(env.get("CLUB_PUBLIC_URL", "")),
            trusted_proxies=env.get("CLUB_TRUSTED_PROXIES", "").strip(),
            allowed_hosts=parse_hosts(env.get("CLUB_ALLOWED_HOSTS", ""))
            or default_hosts(env.get("CLUB_HTTP_HOST", "127.0.0.1")),
            retention=_retention(env),
            email_key_lifetime_s=_key_lifetime(env),
            outage=_outage(env),
        )

    def require_services(self) -> tuple[str, str]:
        """A single role needs real URLs; only `club up` starts embedded servers."""
        if not self.database_url or not self.nats_url:
            msg = (
                "set CLUB_DATABASE_URL and CLUB_NATS_URL for a single role, "
                "or run `club up` to start embedded servers and every role"
            )
            raise ConfigError(msg)
        return self.database_url, self.nats_url

    def operator_services(self) -> tuple[str, str]:
        """An operator's command: the URLs given, else those of the `club up`
        running on CLUB_DATA_DIR (its admin user; config/running.py)."""
        if self.database_url and self.nats_url:
            return self.database_url, self.nats_url
        running = running_beside(self.data_dir)
        if running is None:
            msg = (
                "set CLUB_DATABASE_URL and CLUB_NATS_URL, or run this beside "
                f"`club up` (no Club is running on {self.data_dir}; set "
                "CLUB_DATA_DIR to the one `club up` uses)"
            )
            raise ConfigError(msg)
        return self.database_url or running.database_url, (
            self.nats_url or running.nats_url
        )


# The operator token opens /ops (status, trace, DLQ replay): at least as long as
# the one generated (32 URL-safe characters, 192 bits), and a bearer token's
# characters only (RFC 6750 token68), so it travels in a header unchanged.
MIN_OPERATOR_TOKEN = 32
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


def _operator_token(given: str | None) -> str:
    if given is None:
        return secrets.token_urlsafe(24)
    if len(given) < MIN_OPERATOR_TOKEN or not _TOKEN68.fullmatch(given):
        msg = (
            f"CLUB_OPERATOR_TOKEN must be at least {MIN_OPERATOR_TOKEN} characters "
            "of A-Z a-z 0-9 - . _ ~ + / (it is "
            f"{len(given)}{'' if _TOKEN68.fullmatch(given) else ', with others'}); "
            "unset it to have one generated, or make one with "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
        )
        raise ConfigError(msg)
    return given


def _public_url(raw: str) -> str:
    if not raw:
        return ""
    parts = urlsplit(raw)
    if (
        parts.scheme not in HTTP_SCHEMES
        or not parts.hostname
        or parts.path
        not in (
            "",
            "/",
        )
    ):
        msg = f"CLUB_PUBLIC_URL: {raw!r} is not an origin such as https://club.example"
        raise ConfigError(msg)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _rate(raw: str) -> str:
    try:
        parsed_rate(raw)
    except ValueError as e:
        raise ConfigError(f"CLUB_RATE_LIMIT: {e}") from None
    return raw


def _auth(env: Mapping[str, str]) -> AuthSettings:
    try:
        return AuthSettings.from_env(env)
    except AuthSettingError as e:
        raise ConfigError(str(e)) from None


def _dlq_owners(text: str) -> DlqOwners:
    try:
        return DlqOwners.parse(
            text,
            consumers=(*CONSUMERS, RELAY_DLQ),
            event_types={t for t, _ in READERS},
        )
    except OwnerRulesError as e:
        raise ConfigError(f"CLUB_DLQ_OWNERS: {e}") from None


def _retention(env: Mapping[str, str]) -> Retention:
    """Refused at start-up, by every role and `club up` alike, when the stores'
    retentions break their tie: one line naming both settings and the fix."""
    base = Retention()
    try:
        chosen = Retention(
            stream_s=retention.duration(
                retention.STREAM, env.get(retention.STREAM), base.stream_s
            ),
            dead_letters_s=retention.duration(
                retention.DLQ, env.get(retention.DLQ), base.dead_letters_s
            ),
            inbox_s=retention.duration(
                retention.INBOX, env.get(retention.INBOX), base.inbox_s
            ),
            answers_s=retention.duration(
                retention.ANSWERS, env.get(retention.ANSWERS), base.answers_s
            ),
            exports_s=retention.duration(
                retention.EXPORTS, env.get(retention.EXPORTS), base.exports_s
            ),
        )
    except RetentionError as e:
        raise ConfigError(str(e)) from None
    if problem := chosen.problem(DUPLICATE_WINDOW_S):
        raise ConfigError(problem)
    return chosen


KEY_LIFETIME = "CLUB_EMAIL_KEY_LIFETIME"


def _key_lifetime(env: Mapping[str, str]) -> float:
    """A duration like the retentions': `24h`, `1d`, `90m`, `600s`."""
    try:
        return retention.duration(
            KEY_LIFETIME, env.get(KEY_LIFETIME), DEFAULT_KEY_LIFETIME_S
        )
    except RetentionError as e:
        raise ConfigError(str(e)) from None


def _outage(env: Mapping[str, str]) -> ProviderOutage:
    try:
        return provider_outage(env, _key_lifetime(env))
    except OutageSettingError as e:
        raise ConfigError(str(e)) from None


def stream_retention(chosen: Retention) -> StreamRetention:
    """The streams' max_age as the broker takes it: CLUB_EVENTS keeps the stream
    retention, CLUB_DLQ and CLUB_REPLAY the dead letters'."""
    return StreamRetention(
        events_s=chosen.stream_s, dead_letters_s=chosen.dead_letters_s
    )


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number") from None


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    value = _int(env, name, default)
    if value < 1:
        raise ConfigError(f"{name}={value} must be at least 1")
    return value


def _number(
    env: Mapping[str, str], name: str, default: float, unit: str = "seconds"
) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number of {unit}") from None
    if not 0 < value < math.inf:
        raise ConfigError(f"{name}={raw!r} must be more than 0 {unit}, and finite")
    return value


DEFAULT_EMAIL_PROVIDER_URL = "http://127.0.0.1:8025"  # `club sandbox email`
DEFAULT_PAYMENT_PROVIDER_URL = "http://127.0.0.1:8026"  # `club sandbox payment`


def _saga_policy(env: Mapping[str, str]) -> SagaPolicy:
    """Production waits in minutes; tests shorten every wait through these."""
    base = SagaPolicy()

    def span(name: str, default: timedelta) -> timedelta:
        return timedelta(seconds=_number(env, name, default.total_seconds()))

    offer = env.get("CLUB_SAGA_OFFER_WINDOW_SECONDS")
    return SagaPolicy(
        webhook_grace=span("CLUB_SAGA_WEBHOOK_GRACE_SECONDS", base.webhook_grace),
        first_check=span("CLUB_SAGA_FIRST_CHECK_SECONDS", base.first_check),
        max_check_delay=span("CLUB_SAGA_MAX_CHECK_DELAY_SECONDS", base.max_check_delay),
        max_checks=_positive_int(env, "CLUB_SAGA_MAX_CHECKS", base.max_checks),
        first_retry=span("CLUB_SAGA_FIRST_RETRY_SECONDS", base.first_retry),
        max_retry_delay=span("CLUB_SAGA_MAX_RETRY_DELAY_SECONDS", base.max_retry_delay),
        max_refund_attempts=_positive_int(
            env, "CLUB_SAGA_MAX_REFUND_ATTEMPTS", base.max_refund_attempts
        ),
        # Zero is meaningful here: refund a late payment at once, offer nothing.
        offer_window=base.offer_window
        if offer
        in (
            None,
            "",
        )
        else timedelta(seconds=_non_negative(offer, "CLUB_SAGA_OFFER_WINDOW_SECONDS")),
    )


def _non_negative(raw: str, name: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number of seconds") from None
    if not 0 <= value < math.inf:
        raise ConfigError(f"{name}={raw!r} must be 0 or more seconds, and finite")
    return value


DATABASE_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
HTTP_SCHEMES = ("http", "https")
SMTP_SCHEMES = ("smtp", "smtp+starttls")
LOCAL = ("127.0.0.1", "localhost", "::1", "0.0.0.0")  # noqa: S104 - a name, not a bind


def _email_url(url: str, sender: str) -> str:
    """An HTTP provider, or a mail server, which needs a From address to send as."""
    name = "CLUB_EMAIL_PROVIDER_URL"
    _check_url(name, url, HTTP_SCHEMES + SMTP_SCHEMES, "http:// or smtp://")
    where = urlsplit(url)
    if where.scheme not in SMTP_SCHEMES:
        _check_proxy(name, url)
        return url
    if not sender:
        msg = (
            f"{name}={masked(url)!r} is a mail server, which needs the address mail"
            " comes from: set CLUB_EMAIL_FROM (e.g. CLUB_EMAIL_FROM=club@example.org)"
        )
        raise ConfigError(msg)
    if where.scheme == "smtp" and where.password and where.hostname not in LOCAL:
        msg = (
            f"{name}={masked(url)!r} would send its password in clear to another"
            " host: use smtp+starttls://"
        )
        raise ConfigError(msg)
    return url


def _sender(raw: str) -> str:
    """One address: a line break here would be a header of its own, and without
    SMTPUTF8 an envelope address is ASCII (a server would refuse every e-mail)."""
    shape = raw.count("@") == 1 and raw.isprintable() and raw.isascii()
    if raw and (not shape or " " in raw.strip()):
        msg = f"CLUB_EMAIL_FROM={raw!r} is not one address (e.g. club@example.org)"
        raise ConfigError(msg)
    return raw.strip()


def _http_url(name: str, url: str) -> str:
    _check_url(name, url, HTTP_SCHEMES, "http://")
    _check_proxy(name, url)
    return url


def _check_proxy(name: str, url: str) -> None:
    """The proxy the environment names for this provider, if any, is usable."""
    try:
        check_proxy(url)
    except ValueError as e:
        raise ConfigError(f"{e}; it is the way to {name}") from None


NATS_SCHEMES = ("nats", "tls", "ws", "wss")


def _database_url(url: str | None) -> str | None:
    if url is not None:
        _check_url("CLUB_DATABASE_URL", url, DATABASE_SCHEMES, "postgresql://")
    return url


def _nats_url(url: str | None) -> str | None:
    """A cluster is a comma-separated list; each URL may carry `user:password@`."""
    if url is not None:
        for one in url.split(","):
            _check_url("CLUB_NATS_URL", one.strip(), NATS_SCHEMES, "nats://")
    return url


def _check_url(name: str, url: str, schemes: tuple[str, ...], example: str) -> None:
    """Checked here so that a typo is one line naming the fix, not a driver's
    traceback (or a `ValueError` deep inside a role)."""
    shown = masked(url)
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number in range
    except ValueError:
        msg = f"{name}={shown!r} is not a URL; write it as {example}host:port/..."
        raise ConfigError(msg) from None
    if parts.scheme not in schemes:
        msg = f"{name}={shown!r} must start with {example}, not {parts.scheme}://"
        raise ConfigError(msg)
    if not parts.hostname:
        msg = f"{name}={shown!r} names no host; write it as {example}host:port/..."
        raise ConfigError(msg)


def _optional_port(env: Mapping[str, str], name: str) -> int | None:
    """None when unset; 0 is an explicit "none"."""
    if env.get(name) in (None, ""):
        return None
    value = _int(env, name, 0)
    if not 0 <= value < 65536:  # noqa: PLR2004 - the TCP port range
        raise ConfigError(
            f"{name}={value} is not a TCP port (0 for none, or 1 to 65535)"
        )
    return value


def _port(env: Mapping[str, str], name: str, default: int) -> int:
    value = _int(env, name, default)
    if not 0 < value < 65536:  # noqa: PLR2004 - the TCP port range
        raise ConfigError(f"{name}={value} is not a TCP port (1 to 65535)")
    return value


def exports_dir(data_dir: Path) -> Path:
    """Where roster exports are written and served from, under CLUB_DATA_DIR."""
    return data_dir / "exports"
