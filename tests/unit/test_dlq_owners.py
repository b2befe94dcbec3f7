"""CLUB_DLQ_OWNERS: the most specific rule names a dead letter's owner."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from application.dlq_owners import DEFAULT_OWNER, DlqOwners, OwnerRulesError

CONSUMERS = ("notifications", "rosters", "statistics", "exports")
TYPES = ("EnrollmentConfirmed", "EnrollmentCancelled", "LessonScheduled")
EXAMPLE = (
    "notifications/EnrollmentConfirmed=team-mail, notifications=team-notify,"
    "rosters=team-data,*=club-ops"
)


def parse(text: str) -> DlqOwners:
    return DlqOwners.parse(text, consumers=CONSUMERS, event_types=TYPES)


def test_the_most_specific_rule_wins() -> None:
    owners = parse(EXAMPLE)
    assert owners.owner("notifications", "EnrollmentConfirmed") == "team-mail"
    assert owners.owner("notifications", "EnrollmentCancelled") == "team-notify"
    assert owners.owner("rosters", "EnrollmentConfirmed") == "team-data"
    assert owners.owner("statistics", "LessonScheduled") == "club-ops"


def test_an_unreadable_type_falls_back_to_the_consumers_rule() -> None:
    owners = parse(EXAMPLE)
    assert owners.owner("notifications", "") == "team-notify"
    assert owners.for_consumer("notifications")("") == "team-notify"
    assert owners.for_consumer("notifications")("EnrollmentConfirmed") == "team-mail"


def test_without_rules_every_dead_letter_names_the_default_owner() -> None:
    for text in ("", "  "):
        assert parse(text).owner("rosters", "LessonScheduled") == DEFAULT_OWNER
    assert parse("rosters=team-data").owner("statistics") == DEFAULT_OWNER


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("notifications", "has no '='"),
        ("=team-mail", "names no consumer"),
        ("notifications=", "names no owner"),
        ("notifications=team-mail,,rosters=x", "an empty rule"),
        ("notifications=team-mail,", "an empty rule"),
        ("notifications=a=b", "two '='"),
        ("notificatons=team-mail", "unknown consumer 'notificatons'"),
        ("notifications/EnrolmentConfirmed=x", "unknown event type"),
        ("notifications/=x", "no event type after '/'"),
        ("*/EnrollmentConfirmed=x", "'*' takes no event type"),
        ("notifications=team\x00mail", "NUL byte"),
        ("notifications=team\tmail", "control character"),
        ("rosters=a, rosters=b", "given twice"),
    ],
)
def test_a_malformed_rule_is_refused_with_the_fix(text: str, says: str) -> None:
    with pytest.raises(OwnerRulesError, match=says) as refused:
        parse(text)
    if "unknown consumer" in says:
        assert "notifications" in str(refused.value)  # the names that exist


keys = st.tuples(st.sampled_from((*CONSUMERS, "*")), st.sampled_from(("", *TYPES)))
owner_names = st.from_regex(r"[a-z][a-z0-9-]{0,11}", fullmatch=True)
rule_sets = st.dictionaries(keys.filter(lambda k: k[0] != "*" or not k[1]), owner_names)


@given(
    rule_sets, st.sampled_from(CONSUMERS), st.sampled_from(("", *TYPES)), st.randoms()
)
def test_the_most_specific_rule_always_wins(
    rules: dict[tuple[str, str], str],
    consumer: str,
    event_type: str,
    rnd: random.Random,
) -> None:
    written = [f"{c}/{t}={o}" if t else f"{c}={o}" for (c, t), o in rules.items()]
    rnd.shuffle(written)  # the order rules are written in never matters
    owners = parse(",".join(written))
    if event_type and (consumer, event_type) in rules:
        expected = rules[(consumer, event_type)]
    elif (consumer, "") in rules:
        expected = rules[(consumer, "")]
    elif ("*", "") in rules:
        expected = rules[("*", "")]
    else:
        expected = DEFAULT_OWNER
    assert owners.owner(consumer, event_type) == expected


def test_the_setting_is_read_once_and_a_mistake_is_a_config_error() -> None:
    from entrypoints.config.settings import ConfigError, Settings

    settings = Settings.from_env({"CLUB_DLQ_OWNERS": EXAMPLE})
    assert settings.dlq_owners.owner("notifications", "EnrollmentConfirmed") == (
        "team-mail"
    )
    assert Settings.from_env({}).dlq_owners.owner("rosters") == DEFAULT_OWNER
    with pytest.raises(ConfigError, match=r"CLUB_DLQ_OWNERS: .*unknown consumer"):
        Settings.from_env({"CLUB_DLQ_OWNERS": "mailer=team-mail"})


def test_club_refuses_to_start_on_a_malformed_rule(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from entrypoints.cli.main import main

    monkeypatch.setenv("CLUB_DLQ_OWNERS", "notifications:team-mail")
    assert main(["dlq", "list"]) == 2
    said = capsys.readouterr().err
    assert "CLUB_DLQ_OWNERS: 'notifications:team-mail' has no '='" in said
