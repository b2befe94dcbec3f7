"""CLUB_API_WORKERS: a process count, or a refusal that names the fix."""

from __future__ import annotations

import pytest

from entrypoints.config.settings import ConfigError
from entrypoints.runtime.api_workers import MAX_API_WORKERS, api_workers


@pytest.mark.parametrize(("raw", "count"), [(None, 1), ("", 1), ("1", 1), (" 2 ", 2)])
def test_a_whole_number_is_the_count_and_unset_is_one(
    raw: str | None, count: int
) -> None:
    env = {} if raw is None else {"CLUB_API_WORKERS": raw}
    assert api_workers(env) == count


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5", str(MAX_API_WORKERS + 1)])
def test_anything_else_is_refused_naming_the_fix(raw: str) -> None:
    with pytest.raises(ConfigError, match=r"CLUB_API_WORKERS.*whole number from 1"):
        api_workers({"CLUB_API_WORKERS": raw})
