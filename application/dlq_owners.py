"""Who answers for a dead letter: rules by consumer and event type (CLUB_DLQ_OWNERS).

The setting is a comma-separated list of `consumer[/EventType]=owner` rules, e.g.
`notifications/EnrollmentConfirmed=team-mail,rosters=team-data,*=club-operators`.
The most specific rule wins: the consumer and the event's type, then the consumer,
then `*`, then `DEFAULT_OWNER` — so every dead letter names someone to page.
Pure: the names a rule may use are handed in by whoever parses (the composition
root knows the consumers; the contracts know the event types).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import partial

import attrs

# Named when no rule matches: dead letters always say whom to page.
DEFAULT_OWNER = "club-operators"
# The relay's dead letters (stored events it could not map) go to `club.dlq.relay`;
# a rule `relay=owner` names who answers for them (they have no published type).
RELAY_DLQ = "relay"
ANY_CONSUMER = "*"
SYNTAX = "consumer[/EventType]=owner, comma-separated"


class OwnerRulesError(ValueError):
    """The rules are malformed; the message says which rule and how to fix it."""


@attrs.frozen
class OwnerRule:
    consumer: str  # a consumer's name, or ANY_CONSUMER
    event_type: str  # "" for every type of that consumer
    owner: str


@attrs.frozen
class DlqOwners:
    rules: tuple[OwnerRule, ...] = ()

    def owner(self, consumer: str, event_type: str = "") -> str:
        """The most specific rule's owner; `event_type` "" (unreadable) skips the
        type rules and falls back to the consumer's."""
        wanted = [(consumer, event_type), (consumer, ""), (ANY_CONSUMER, "")]
        for key in wanted:
            for rule in self.rules:
                if (rule.consumer, rule.event_type) == key:
                    return rule.owner
        return DEFAULT_OWNER

    def for_consumer(self, consumer: str) -> Callable[[str], str]:
        """One consumer's lookup, `event_type -> owner`, as its runner takes it."""
        return partial(self.owner, consumer)

    @classmethod
    def parse(
        cls,
        text: str,
        *,
        consumers: Collection[str],
        event_types: Collection[str],
    ) -> DlqOwners:
        """Read the setting; a mistake raises OwnerRulesError naming the fix."""
        if "\x00" in text:
            raise OwnerRulesError("contains a NUL byte; write plain text")
        if not text.strip():
            return cls()
        rules: dict[tuple[str, str], OwnerRule] = {}
        for written in text.split(","):
            rule = _rule(written.strip(), consumers, event_types)
            key = (rule.consumer, rule.event_type)
            if key in rules:
                raise OwnerRulesError(
                    f"{_name(rule)!r} is given twice ({rules[key].owner!r} and "
                    f"{rule.owner!r}); keep one"
                )
            rules[key] = rule
        return cls(tuple(rules.values()))


def _rule(
    written: str, consumers: Collection[str], event_types: Collection[str]
) -> OwnerRule:
    if not written:
        raise OwnerRulesError(f"an empty rule (two commas, or one at an end); {SYNTAX}")
    name, equals, owner = written.partition("=")
    name, owner = name.strip(), owner.strip()
    if not equals:
        raise OwnerRulesError(f"{written!r} has no '='; write {SYNTAX}")
    if not name:
        raise OwnerRulesError(f"{written!r} names no consumer before '='; {SYNTAX}")
    if not owner:
        raise OwnerRulesError(f"{written!r} names no owner after '='; {SYNTAX}")
    if "=" in owner:
        raise OwnerRulesError(
            f"{written!r} has two '='; separate rules with a comma ({SYNTAX})"
        )
    if not owner.isprintable():
        raise OwnerRulesError(
            f"the owner in {written!r} holds a control character; write plain text"
        )
    consumer, slash, event_type = name.partition("/")
    consumer, event_type = consumer.strip(), event_type.strip()
    if consumer == ANY_CONSUMER:
        if slash:
            raise OwnerRulesError(
                f"{name!r}: '*' takes no event type; write consumer/{event_type} "
                "for each consumer instead"
            )
    elif consumer not in consumers:
        raise OwnerRulesError(
            f"{name!r}: unknown consumer {consumer!r}; the consumers are "
            f"{', '.join(sorted(consumers))}, or '*' for all"
        )
    if slash and not event_type:
        raise OwnerRulesError(f"{name!r} names no event type after '/'; {SYNTAX}")
    if slash and event_type not in event_types:
        raise OwnerRulesError(
            f"{name!r}: unknown event type {event_type!r}; the types are "
            f"{', '.join(sorted(event_types))}"
        )
    return OwnerRule(consumer, event_type, owner)


def _name(rule: OwnerRule) -> str:
    return f"{rule.consumer}/{rule.event_type}" if rule.event_type else rule.consumer
