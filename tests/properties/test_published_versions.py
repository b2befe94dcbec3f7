"""Every published version on its own, at full count: the relay's one-pass bytes
(150 examples) and the JSON round trip (100).

tests/contracts runs both over all versions at once in one Hypothesis run apiece,
for `make test-unit`'s seconds; these runs, one per version, are `make test`'s."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from application.contracts.events import EVERY_VERSION, PublishedEvent
from tests.contracts.test_codec import any_instance, assert_one_pass_bytes, moments
from tests.contracts.test_published_events import assert_round_trips, built

each_version = pytest.mark.parametrize(
    "cls", EVERY_VERSION, ids=lambda c: f"{c.TYPE}v{c.VERSION}"
)


@each_version
@settings(max_examples=150, deadline=None)
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
