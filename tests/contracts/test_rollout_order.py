"""Readers first, then the mapping: the relay never publishes a version that some
consumer cannot read."""

from __future__ import annotations

from typing import ClassVar

import attrs

from application.contracts.events import READERS
from application.contracts.mapping import PUBLISHED, unreadable_published_versions
from domain.enrollment import Enrollment
from entrypoints.runtime.bootstrap import PROJECTIONS
from tests.contracts.test_published_events import EXAMPLE_FILES


def test_every_version_the_relay_publishes_has_a_reader() -> None:
    assert unreadable_published_versions(PUBLISHED, READERS) == []


def test_every_version_the_relay_publishes_has_an_example_every_consumer_applies() -> (
    None
):
    """test_consumers_read_every_example applies each stored example in each
    consumer in PROJECTIONS; here: the published versions are among them."""
    stored = {(p.parent.name, int(p.stem[1:])) for p in EXAMPLE_FILES}
    assert PROJECTIONS  # the consumers the examples are applied in
    assert PUBLISHED  # the mapping is not empty
    assert unreadable_published_versions(PUBLISHED, stored) == []


@attrs.frozen(kw_only=True)
class EnrollmentConfirmedV3:
    """A version switched on in the mapping before any consumer got its reader."""

    TYPE: ClassVar[str] = "EnrollmentConfirmed"
    VERSION: ClassVar[int] = 3


def _confirmed_v3(e: Enrollment.Confirmed) -> EnrollmentConfirmedV3:
    return EnrollmentConfirmedV3()


def test_a_mapping_switched_before_its_readers_is_caught() -> None:
    early = PUBLISHED | {Enrollment.Confirmed: ("enrollment", _confirmed_v3)}
    assert unreadable_published_versions(early, READERS) == [
        "Enrollment.Confirmed -> EnrollmentConfirmed v3"
    ]
