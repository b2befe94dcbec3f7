"""The API as an import string (`entrypoints.runtime.asgi:create_app`, a factory) for
uvicorn's worker processes: each one builds its own container (its own pool of
connections) from the environment, as `club api` does in a single process."""

from __future__ import annotations

import atexit
import os

from starlette.types import ASGIApp

from entrypoints.config.logging_setup import configure_logging, log_format
from entrypoints.config.settings import Settings
from entrypoints.runtime import bootstrap
from entrypoints.runtime.roles import _build_when_reachable  # roles.py owns the wait
from entrypoints.runtime.startup_heap import freeze_startup_heap


def create_app() -> ASGIApp:
    # A worker process is a fresh interpreter that never ran `cli.main`.
    configure_logging("api", log_format(os.environ))
    settings = Settings.from_env()
    database_url, _ = settings.require_services()
    container = _build_when_reachable(
        database_url, **bootstrap.container_options(settings, bootstrap.Role("api"))
    )
    assert container is not None  # noqa: S101 - only a stop check returns None
    # A worker ends after uvicorn's graceful shutdown: close its pool on the way out.
    atexit.register(container.close)
    app = bootstrap.build_api(settings, container)
    freeze_startup_heap()
    return app
