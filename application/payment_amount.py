"""What an amount of money is, for the payment port: whole cents, within bounds."""

from __future__ import annotations

MAX_AMOUNT_CENTS = 10**10  # a hundred million in any currency: more is a mistake


def check_amount(amount_cents: int) -> int:
    # bool is an int: `True` cents is a bug, not one cent.
    if (
        isinstance(amount_cents, bool)
        or not isinstance(amount_cents, int)
        or not 1 <= amount_cents <= MAX_AMOUNT_CENTS
    ):
        raise ValueError(f"an amount is a whole number of cents, 1-{MAX_AMOUNT_CENTS}")
    return amount_cents
