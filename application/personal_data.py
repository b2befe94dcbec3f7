"""What may never leave the student directory: e-mail addresses (and names).

Events carry ids only, and code never logs a profile. This is the second line: any
text that *might* quote an address — a provider's refusal ("550 <ann@x.org>:
mailbox unavailable"), an exception's message — passes here before it is stored in a
notification row, a dead letter's reason or a log line.
"""

from __future__ import annotations

import re

ADDRESS_MASK = "<e-mail>"
NAME_MASK = "<name>"

# Wider than the domain's own check in one way (any dotted domain whose last label
# holds a letter) and narrower in two: `*` is not a local-part character, so a
# URL's masked password (`nats://relay:***@host.org`) is left alone, and an IP
# address or `localhost` after the `@` is a URL's host, not a mailbox. Unicode
# letters count (`\w`): RFC 6531 addresses are accepted at the door.
EMAIL_ADDRESS = re.compile(
    r"[\w!#$%&+/=?^`{|}~-][\w.!#$%&'+/=?^`{|}~-]*"  # not from a quote: 'a@b.org'
    r"@[\w-]+(?:\.[\w-]+)*\.(?=[\w-]*[^\W\d_])[\w-]{2,}"
)


def without_addresses(text: str) -> str:
    """`text` with every substring that looks like an e-mail address masked."""
    return EMAIL_ADDRESS.sub(ADDRESS_MASK, text)


def scrubbed(text: str, *, email: str = "", name: str = "") -> str:
    """`text` without this student's address and name (known: masked wherever they
    appear, whatever their shape) nor anything else that looks like an address."""
    if email:
        text = text.replace(email, ADDRESS_MASK)
    if name.strip():  # as a whole word: "Al" must not garble "Already"
        text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", NAME_MASK, text)
    return without_addresses(text)
