"""Only the API's own names are served (contract §4.1, CLUB_ALLOWED_HOSTS): a web
page that rebinds its DNS name to 127.0.0.1 reaches the port, but sends its own
name in `Host`, and is refused before anything else runs."""

from __future__ import annotations

import json
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send


def _host_of(header: bytes) -> str:
    text = header.decode("latin-1").strip().lower()
    if text.startswith("["):  # [::1]:8000
        return text[1 : text.find("]")] if "]" in text else text
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


class AllowedHosts:
    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"host", b"")
        if _host_of(header) in self.hosts:
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {
                "type": "/problems/host-not-allowed",
                "title": "Host not allowed",
                "status": 400,
                "detail": "this API answers to its own names only (CLUB_ALLOWED_HOSTS)",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [
                    (b"content-type", b"application/problem+json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
