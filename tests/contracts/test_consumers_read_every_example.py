"""Every consumer accepts every stored example of every published version."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from adapters.postgres.database import create_engine
from adapters.postgres.inbox import Delivery, apply_batch
from entrypoints.runtime.bootstrap import PROJECTIONS, migrate_database
from tests.contracts.test_published_events import EXAMPLE_FILES, EXAMPLE_IDS, load


@pytest.fixture(scope="module")
def engine(database_url):
    migrate_database(database_url)
    engine = create_engine(database_url)
    yield engine
    engine.dispose()


@pytest.mark.parametrize("consumer", sorted(PROJECTIONS))
@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_consumer_applies_the_example(engine, consumer: str, path: Path) -> None:
    _, apply = PROJECTIONS[consumer]
    envelope = load(path)
    delivery = Delivery(envelope, hashlib.sha256(path.read_bytes()).digest(), 1)
    with engine.connect() as conn, conn.begin() as transaction:
        outcome = apply_batch(conn, consumer, [delivery], apply)
        transaction.rollback()  # examples share ids; leave nothing behind
    assert outcome.applied == 1
    assert outcome.conflicts == []
