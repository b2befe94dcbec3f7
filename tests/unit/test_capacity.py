"""The capacity model (docs/background.md §33) and `club capacity`: numbers, words, bad
input."""

from __future__ import annotations

import doctest
import json
import math

import pytest

from application import capacity
from application.capacity import CapacityInputError, plan, verdict
from entrypoints.cli.main import main


def test_the_seed_numbers_hold_as_doctests() -> None:
    """`make test` runs the module's doctests through this test."""
    failed, attempted = doctest.testmod(capacity, raise_on_error=False)
    assert attempted >= 8
    assert failed == 0


def test_arrivals_slow_the_drain_but_not_the_last_queued_items_wait() -> None:
    model = plan(backlog=6000, arrival_rate=80, service_rate=100)
    assert model.drain_seconds == pytest.approx(300)
    assert model.last_queued_wait_seconds == pytest.approx(60)
    assert "300 s" in model.explain()


@pytest.mark.parametrize("arrival", [100, 150])
def test_arrivals_as_fast_as_service_never_drain(arrival: float) -> None:
    model = plan(backlog=6000, arrival_rate=arrival, service_rate=100)
    assert not model.drains
    assert math.isinf(model.drain_seconds)
    assert "NEVER DRAINS" in model.explain()
    assert verdict(eta_seconds=1, promise_seconds=10, drains=model.drains) == (
        "never drains"
    )


@pytest.mark.parametrize(
    ("backlog", "arrival", "service"),
    [(-1, 0, 1), (1, -1, 1), (1, 0, 0), (math.inf, 0, 1), (1, math.nan, 1)],
)
def test_the_model_refuses_what_it_cannot_use(backlog, arrival, service) -> None:
    with pytest.raises(CapacityInputError):
        plan(backlog=backlog, arrival_rate=arrival, service_rate=service)


def test_club_capacity_explains_the_seed_example(capsys) -> None:
    code = main(
        [
            "capacity",
            "--backlog",
            "6000",
            "--arrival-rate",
            "80",
            "--service-rate",
            "100",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "after 300 s" in out
    assert "waits 60 s" in out


def test_club_capacity_json(capsys) -> None:
    argv = ["capacity", "--backlog", "5", "--arrival-rate", "9", "--service-rate", "3"]
    assert main([*argv, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["drains"] is False
    assert shown["drain_seconds"] is None


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--backlog", "-5", "cannot be negative"),
        ("--backlog", "lots", "is not a number"),
        ("--arrival-rate", "inf", "finite"),
        ("--arrival-rate", "nan", "finite"),
        ("--service-rate", "fast", "is not a number"),
    ],
)
def test_bad_arguments_get_a_message_and_exit_2(capsys, flag, value, says) -> None:
    args = {"--backlog": "10", "--arrival-rate": "1", "--service-rate": "2"}
    args[flag] = value
    with pytest.raises(SystemExit) as exited:
        main(["capacity", *[part for pair in args.items() for part in pair]])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert says in err
    assert "Traceback" not in err


def test_zero_service_is_refused_with_exit_2_and_no_traceback(capsys) -> None:
    """Answered, not raised: `python -m entrypoints.cli` exits with what main returns
    (tests/e2e/test_cli_errors.py runs the process for the settings' refusals)."""
    argv = ["capacity", "--backlog", "10", "--arrival-rate", "0", "--service-rate", "0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "service rate must be above 0" in err
    assert "Traceback" not in err
