"""Masking runs on every log line: whatever a line holds, it takes time linear in
its length (a quadratic pattern turns a long hostile line into a stalled role)."""

import pytest

from entrypoints.config.masking import masked

LONG = 200_000  # quadratic here is minutes; linear is milliseconds


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "line",
    [
        "a" * LONG + "://user:" + "b" * LONG,  # a scheme run before "://"
        "a." * LONG + "://user:" + "b" * LONG,
        "a://x:" * LONG,  # heads in a row, none with a password
        ",a" * LONG + "://user:" + "b" * LONG,
    ],
    ids=["run", "dotted run", "heads", "commas"],
)
def test_a_long_line_without_a_password_is_masked_as_it_was(line: str) -> None:
    assert masked(line) == line


@pytest.mark.timeout(10)
def test_a_password_after_a_long_line_is_still_masked() -> None:
    line = "x" * LONG + " smtp://u:p/w@mail.example"
    assert masked(line) == "x" * LONG + " smtp://u:***@mail.example"
