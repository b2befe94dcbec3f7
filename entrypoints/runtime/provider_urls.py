"""Which e-mail adapter CLUB_EMAIL_PROVIDER_URL names, and whether `club up` starts
a sandbox to play a provider.

http(s)://host:port        the provider's HTTP API (`club sandbox email` by default)
smtp://[user:pw@]host[:25] a mail server, plain SMTP
smtp+starttls://...[:587]  a mail server, upgraded to TLS before anything is said
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from adapters.providers.email_http import HttpEmailProvider
from adapters.providers.email_smtp import SmtpEmailProvider
from application.ports import EmailProvider
from entrypoints.config.settings import LOCAL, SMTP_SCHEMES, Settings

SMTP_PORTS = {"smtp": 25, "smtp+starttls": 587}


def email_provider(settings: Settings) -> EmailProvider:
    where = urlsplit(settings.email_provider_url)
    if where.scheme not in SMTP_SCHEMES:
        return HttpEmailProvider(settings.email_provider_url)
    login = None
    if where.username is not None:
        login = (unquote(where.username), unquote(where.password or ""))
    return SmtpEmailProvider(
        where.hostname or "",  # settings refused a URL without a host
        where.port or SMTP_PORTS[where.scheme],
        sender=settings.email_sender,
        starttls=where.scheme == "smtp+starttls",
        login=login,
    )


def sandbox_plays(provider_url: str) -> bool:
    """`club up` starts a sandbox only for an HTTP provider on this machine: one
    elsewhere is real (or someone else's), and a sandbox asked to listen on its
    address would only fail and be restarted, over and over."""
    where = urlsplit(provider_url)
    return where.scheme == "http" and where.hostname in LOCAL
