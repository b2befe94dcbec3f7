"""The published language's properties at full count: `make test` runs these,
`make test-unit` runs the same properties at Hypothesis's default 100 examples
(all versions at once, where these take each version on its own).

- the relay's one-pass bytes are json.dumps's: 150 examples of each version
- each version's JSON round trip: 100 examples of each version
- the fast reader of stored states maps any stored event as the library does: 300
- any plain data encodes as json.dumps does: 400
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import Mapper
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from application.club import ClubApplication
from application.contracts.events import EVERY_VERSION, PublishedEvent
from tests.contracts.test_codec import any_instance, assert_one_pass_bytes, moments
from tests.contracts.test_envelope_bytes import (
    assert_encodes_as_json_dumps_does,
    plain_data,
)
from tests.contracts.test_published_events import assert_round_trips, built
from tests.unit.test_stored_state import assert_same, domain_events, notification

each_version = pytest.mark.parametrize(
    "cls", EVERY_VERSION, ids=lambda c: f"{c.TYPE}v{c.VERSION}"
)


@each_version
@settings(max_examples=150)
@given(data=st.data(), occurred_at=moments)
def test_one_pass_writes_json_dumps_bytes_for_every_version(
    cls: type[PublishedEvent], data: st.DataObject, occurred_at: datetime
) -> None:
    assert_one_pass_bytes(data.draw(any_instance(cls)), occurred_at)


@each_version
@given(data=st.data())
def test_every_version_round_trips(
    cls: type[PublishedEvent], data: st.DataObject
) -> None:
    assert_round_trips(data.draw(built(cls)))


@pytest.fixture(scope="module")
def mapper() -> Mapper[UUID]:
    return ClubApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"}).mapper


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(event=domain_events())
def test_any_stored_event_maps_the_same(mapper: Mapper[UUID], event: Any) -> None:
    assert_same(mapper, notification(event, mapper))


@settings(max_examples=400)
@given(plain_data)
def test_any_plain_data_encodes_as_json_dumps_does(data: dict[str, Any]) -> None:
    assert_encodes_as_json_dumps_does(data)
