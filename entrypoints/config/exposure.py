"""What the public API exposes and to whom (CLUB_RATE_LIMIT, CLUB_ALLOWED_HOSTS)."""

from __future__ import annotations

import limits

DEFAULT_RATE = "50/second"
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"", "0.0.0.0", "::"})  # noqa: S104 - names, not a bind


def parsed_rate(rate: str) -> limits.RateLimitItem:
    """`50/second`, `1000/minute`, `10 per second`…; ValueError names the mistake."""
    try:
        return limits.parse(rate)
    except ValueError:
        msg = f"{rate!r} is no rate: write it as 50/second, 1000/minute or 10/s"
        raise ValueError(msg) from None


def default_hosts(http_host: str) -> frozenset[str]:
    """The API's own address; bound to every interface, its loopback names only
    (a deployment names its public ones in CLUB_ALLOWED_HOSTS)."""
    return LOOPBACK | ({http_host.strip("[]")} - WILDCARDS)


def parse_hosts(raw: str) -> frozenset[str]:
    return frozenset(h.strip().lower().strip("[]") for h in raw.split(",") if h.strip())
