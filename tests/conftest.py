"""Fixtures: one PostgreSQL per session, a database and a NATS server per module."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import hypothesis
import pytest

# Imported early on purpose: when the first import of hypothesis happens in pytest's
# terminal summary (a run without any hypothesis test), CPython 3.11.7's ast.parse
# fails there with "AST constructor recursion depth mismatch".

# No time limits on examples: a property is about what comes out, not how fast
# (speed is `make bench`'s), and a loaded 2-core CI box stalls for longer than
# hypothesis's 200 ms deadline or its too-slow check allow.
hypothesis.settings.register_profile(
    "club",
    deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow],
)
hypothesis.settings.load_profile("club")

# The servers' modules (bootstrap, FastAPI, SQLAlchemy: seconds) are imported by the
# fixtures that start them, not here: `make test-unit`'s xdist controller loads this
# file before any worker starts, and it runs no test.
if TYPE_CHECKING:
    from adapters.embedded.nats import EmbeddedNats
    from adapters.providers.email_http import HttpEmailProvider
    from entrypoints.runtime import bootstrap
    from tests.integration.sandbox_process import SandboxProcess

TESTS = Path(__file__).parent
UNIT_FOLDERS = ("unit", "contracts", "ports")  # the only folders with `unit` tests
SERVER_FIXTURES = frozenset(
    {"postgres_server_url", "database_url", "nats", "nats_url", "migrated",
     "container", "container_for"}
)  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Layers by folder: `unit` needs no server (`make test-unit`, seconds); a test
    in tests/unit or tests/contracts that does need one counts as `integration`.
    A test that reaches PostgreSQL is also marked `postgres` (CI runs those once
    more against the machine's server: `make test-postgres`)."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        params = getattr(item, "callspec", None)
        # A store chosen by parameter asks for its database when it runs.
        postgres_param = params is not None and "postgres" in params.params.values()
        if postgres_param or "postgres_server_url" in fixtures:
            item.add_marker("postgres")
        layer = Path(str(item.path)).relative_to(TESTS).parts[0]
        if layer in UNIT_FOLDERS:
            needs_servers = postgres_param or bool(SERVER_FIXTURES & fixtures)
            layer = "integration" if needs_servers else "unit"
        item.add_marker(layer)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`-m unit` does not import the server layers' modules only to deselect them."""
    if config.option.markexpr != "unit" or collection_path.parent != TESTS:
        return None
    if collection_path.is_dir() and collection_path.name not in UNIT_FOLDERS:
        return True
    return None


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    from tests import servers

    with servers.postgres_server() as url:
        yield url


@pytest.fixture(scope="module")
def database_url(postgres_server_url: str) -> Iterator[str]:
    from tests import servers

    with servers.fresh_database(postgres_server_url) as url:
        yield url


@pytest.fixture(scope="module")
def nats() -> Iterator[tuple[str, EmbeddedNats | None]]:
    from tests import servers

    with servers.nats_server() as server:
        yield server


@pytest.fixture(scope="module")
def nats_url(nats: tuple[str, EmbeddedNats | None]) -> str:
    return nats[0]


@pytest.fixture(scope="module")
def migrated(database_url: str, nats_url: str) -> tuple[str, str]:
    from entrypoints.runtime import bootstrap

    bootstrap.migrate(database_url, nats_url)
    return database_url, nats_url


@pytest.fixture(scope="module")
def container(migrated: tuple[str, str]) -> Iterator[bootstrap.Container]:
    from entrypoints.runtime import bootstrap

    c = bootstrap.build(migrated[0], pool_size=5)
    yield c
    c.close()


@pytest.fixture
def container_for() -> Iterator[Callable[[str], bootstrap.Container]]:
    """Containers built on demand (e.g. after a server restart), closed at the end."""
    from entrypoints.runtime import bootstrap

    built: list[bootstrap.Container] = []

    def build(url: str) -> bootstrap.Container:
        built.append(bootstrap.build(url, pool_size=5))
        return built[-1]

    yield build
    for c in built:
        c.close()


@pytest.fixture(scope="module")
def guarded_nats(request: pytest.FixtureRequest) -> Iterator[EmbeddedNats]:
    """A broker of this module's own that admits only Club's users, each with its
    own permissions, as `club up` and the compose cluster configure it."""
    from adapters.embedded.nats import EmbeddedNats
    from adapters.nats.authorization import role_users
    from entrypoints.runtime import bootstrap
    from tests.stack import scratch_for

    server = EmbeddedNats(
        scratch_for(request, "nats"),
        sync_always=False,
        users=role_users(bootstrap.CONSUMERS),
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def email_sandbox(request: pytest.FixtureRequest) -> Iterator[SandboxProcess]:
    """The e-mail sandbox as a process of this module's own, named after it."""
    from tests.integration.sandbox_process import SandboxProcess
    from tests.stack import scratch_for

    with SandboxProcess(scratch_for(request, "sandbox") / "data").running() as process:
        yield process


@pytest.fixture
def email_provider(email_sandbox: SandboxProcess) -> Iterator[HttpEmailProvider]:
    """The HTTP e-mail client on the module's sandbox, its knobs at the defaults."""
    from adapters.providers.email_http import HttpEmailProvider

    with email_sandbox.fresh_knobs():
        client = HttpEmailProvider(email_sandbox.url, read_timeout_s=2.0)
        yield client
        client.close()
