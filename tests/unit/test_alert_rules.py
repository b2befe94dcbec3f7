"""The alert rules name only series the roles serve: a renamed metric fails here,
not silently in production (an alert on a series that never exists never fires)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from prometheus_client.metrics_core import Metric
from ruamel.yaml import YAML

import adapters.metrics
import entrypoints.http.routes.webhooks
import entrypoints.ops.status_metrics

pytestmark = pytest.mark.unit

RULES = Path(__file__).resolve().parents[2] / "deploy/prometheus-alerts.yml"
# Imported for what they register: every metric a role serves.
SERVED_BY = (
    adapters.metrics,
    entrypoints.ops.status_metrics,
    entrypoints.http.routes.webhooks,
)


def _served() -> set[str]:
    """Every sample name the processes expose (counters as `_total`, histograms
    as `_bucket`, `_sum`, `_count`)."""
    names: set[str] = set()
    for family in REGISTRY.collect():
        names |= _sample_names(family)
    return names


def _sample_names(family: Metric) -> set[str]:
    suffixes = {
        "counter": ["_total", "_created"],
        "histogram": ["_bucket", "_sum", "_count", "_created"],
    }.get(family.type, [""])
    return {family.name + suffix for suffix in suffixes}


def _rules() -> list[dict[str, object]]:
    groups = YAML(typ="safe").load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_every_series_an_alert_reads_is_served() -> None:
    served = _served()
    for rule in _rules():
        named = set(re.findall(r"\b(club_[a-z_]+)\b", str(rule["expr"])))
        assert named <= served, (rule["alert"], named - served)


def test_the_alerts_cover_the_chains_bad_days() -> None:
    alerts = {str(rule["alert"]) for rule in _rules()}
    assert {
        "ClubDeadLetters",
        "ClubDeadLettersExpiring",
        "ClubConfirmationLate",
        "ClubRelayBehind",
        "ClubRoleMissing",
        "ClubNoWorker",
        "ClubManualReviewWaiting",
        "ClubProviderCircuitOpen",
    } <= alerts
