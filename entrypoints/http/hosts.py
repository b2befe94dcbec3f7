"""Only the API's own names are served (contract §4.1, CLUB_ALLOWED_HOSTS): a web
page that rebinds its DNS name to 127.0.0.1 reaches the port, but sends its own
name in `Host`, and is refused before anything else runs (`edge.py`)."""

from __future__ import annotations

import functools

from starlette.responses import Response

from entrypoints.http.problems import problem

# A DNS name is at most 253 bytes, with a port and brackets under 300: only
# headers that short are cached, so no client can make the cache hold big ones.
_CACHED_AT_MOST = 300


def _host_of(header: bytes) -> str:
    text = header.decode("latin-1").strip().lower()
    if text.startswith("["):  # [::1]:8000
        return text[1 : text.find("]")] if "]" in text else text
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


@functools.lru_cache(maxsize=256)  # the few names a deployment is called by
def _cached_host_of(header: bytes) -> str:
    return _host_of(header)


def serves(hosts: frozenset[str], header: bytes) -> bool:
    """Whether a request whose `Host` header is `header` is for one of `hosts`."""
    if len(header) <= _CACHED_AT_MOST:
        return _cached_host_of(header) in hosts
    return _host_of(header) in hosts


def host_refused() -> Response:
    return problem(
        400, "host-not-allowed", "Host not allowed",
        "this API answers to its own names only (CLUB_ALLOWED_HOSTS)",
    )  # fmt: skip
