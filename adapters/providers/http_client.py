"""One bounded HTTP client for a provider: every phase has a timeout, so a provider
that hangs costs a timeout, never a worker or a saga."""

from __future__ import annotations

import httpx


def provider_client(
    base_url: str, setting: str, *, connect_timeout_s: float, read_timeout_s: float
) -> httpx.Client:
    """`setting` names the variable to fix when the URL is not http(s)://host."""
    url = httpx.URL(base_url)
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(f"{setting} must look like http://host:port, got {base_url!r}")
    timeout = httpx.Timeout(read_timeout_s, connect=connect_timeout_s)
    return httpx.Client(base_url=url, timeout=timeout)
