"""`/openapi.json` states every constraint the API enforces and links what it creates.

An outside fuzzer reads only this document: a constraint missing here is data the
schema allows and the API refuses, and a resource without a link cannot be reached.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from domain.student import EMAIL_PATTERN, STUDENT_ID_PATTERN
from domain.text import SINGLE_LINE_PATTERN
from entrypoints.http.schemas import STARTS_AT_PATTERN
from entrypoints.runtime.api import create_app
from tests.identity import VERIFIER

PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    # The document needs no database: the routes never run.
    app = create_app(SimpleNamespace(app=None), verifier=VERIFIER)  # type: ignore[arg-type]
    with TestClient(app) as client:
        return client.get("/openapi.json").json()


def operations(spec) -> dict[str, tuple[str, str, dict[str, Any]]]:
    return {
        op["operationId"]: (method, path, op)
        for path, item in spec["paths"].items()
        for method, op in item.items()
    }


def schema_of(spec, name: str) -> dict[str, Any]:
    return spec["components"]["schemas"][name]


def parameter(op, name: str) -> dict[str, Any]:
    return next(p for p in op["parameters"] if p["name"] == name)


def test_every_text_field_states_its_pattern_and_lengths(spec) -> None:
    lesson = schema_of(spec, "LessonIn")["properties"]
    student = schema_of(spec, "StudentIn")["properties"]
    for field, limit in ((lesson["title"], 200), (student["name"], 200)):
        assert field["pattern"] == SINGLE_LINE_PATTERN
        assert (field["minLength"], field["maxLength"]) == (1, limit)
        assert "control character" in field["description"]
    assert student["email"]["pattern"] == EMAIL_PATTERN
    assert student["email"]["maxLength"] == 254
    enrollment = schema_of(spec, "EnrollmentIn")["properties"]["student_id"]
    assert enrollment["pattern"] == STUDENT_ID_PATTERN
    assert enrollment["maxLength"] == 64


def test_numbers_and_dates_state_their_bounds(spec) -> None:
    lesson = schema_of(spec, "LessonIn")
    props = lesson["properties"]
    assert props["capacity"]["type"] == "integer"
    assert (props["capacity"]["minimum"], props["capacity"]["maximum"]) == (1, 10_000)
    assert props["price_cents"]["type"] == "integer"
    assert (props["price_cents"]["minimum"], props["price_cents"]["maximum"]) == (
        0,
        100_000_000,
    )
    starts = props["starts_at"]
    assert (starts["type"], starts["format"]) == ("string", "date-time")
    assert starts["pattern"] == STARTS_AT_PATTERN
    assert lesson["additionalProperties"] is False
    assert set(lesson["required"]) == {"title", "capacity", "starts_at"}


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("2026-12-01T10:00:00Z", True),
        ("8999-12-31T23:59:59.5-14:00", True),
        ("9999-12-31T23:00:00-05:00", False),
        ("0001-01-01T00:30:00+01:00", False),
        ("2026-12-01T10:00:00-15:00", False),
        ("2026-12-01T10:00:00", False),
    ],
)
def test_the_starts_at_pattern_reads_like_the_rule(spec, value, allowed) -> None:
    pattern = schema_of(spec, "LessonIn")["properties"]["starts_at"]["pattern"]
    assert (re.search(pattern, value) is not None) == allowed


def test_the_student_id_path_states_the_pattern_and_it_refuses_a_newline(spec) -> None:
    _, _, op = operations(spec)["put_student"]
    schema = parameter(op, "student_id")["schema"]
    assert schema["pattern"] == STUDENT_ID_PATTERN
    assert schema["maxLength"] == 64
    # ECMA-262 `$` without the m flag ends the text: "ann\n" must not match.
    assert re.fullmatch(schema["pattern"][1:-1], "ann\n") is None


def test_the_idempotency_key_is_stated_where_it_is_taken(spec) -> None:
    ops = operations(spec)
    for operation_id, required in (
        ("enroll_student", True),
        ("schedule_lesson", False),
    ):
        key = parameter(ops[operation_id][2], "Idempotency-Key")
        assert key["in"] == "header"
        assert key["required"] is required
        schema = key["schema"]
        string = next(s for s in schema.get("anyOf", [schema]) if s["type"] == "string")
        assert (string["minLength"], string["maxLength"]) == (1, 255)


def link_targets(spec, operation_id: str) -> dict[str, dict[str, str]]:
    ops = operations(spec)
    method, _, op = ops[operation_id]
    status = "201" if method == "post" else "200"
    links = op["responses"][status]["links"]
    return {link["operationId"]: link["parameters"] for link in links.values()}


@pytest.mark.parametrize(
    ("source", "targets"),
    [
        ("schedule_lesson", {"get_lesson", "get_roster", "enroll_student"}),
        ("enroll_student", {"get_enrollment", "cancel_enrollment"}),
    ],
)
def test_created_resources_link_to_their_routes(spec, source, targets) -> None:
    ops = operations(spec)
    links = link_targets(spec, source)
    assert set(links) == targets
    response_schema = ops[source][2]["responses"]["201"]["content"]["application/json"][
        "schema"
    ]
    produced = schema_of(spec, response_schema["$ref"].split("/")[-1])["properties"]
    for target, parameters in links.items():
        path_params = {
            p["name"] for p in ops[target][2]["parameters"] if p["in"] == "path"
        }
        assert set(parameters) == path_params, target
        for expression in parameters.values():
            assert expression.startswith("$response.body#/")
            assert expression.removeprefix("$response.body#/") in produced


def test_every_problem_a_route_answers_is_documented_as_problem_json(spec) -> None:
    expected = {
        "put_student": {"413", "422", "503"},
        "schedule_lesson": {"400", "409", "413", "422", "503"},
        "get_lesson": {"404", "422", "503"},
        "enroll_student": {"400", "404", "409", "413", "422", "503"},
        "get_enrollment": {"404", "422", "503"},
        "cancel_enrollment": {"404", "413", "422", "503"},
        "get_roster": {"404", "422", "503"},
        "get_statistics": {"503"},
    }
    ops = operations(spec)
    for operation_id, statuses in expected.items():
        responses = ops[operation_id][2]["responses"]
        assert statuses <= set(responses), operation_id
        for status in statuses:
            assert set(responses[status]["content"]) == {PROBLEM}, (
                operation_id,
                status,
            )


def test_the_read_models_name_their_position_for_what_it_is(spec) -> None:
    for name in ("RosterOut", "StatisticsOut"):
        field = schema_of(spec, name)["properties"]["last_applied_seq"]
        assert field["type"] == "integer"
        assert "Not a watermark" in field["description"]
        assert "position" not in schema_of(spec, name)["properties"]


def test_the_document_declares_the_bearer_scheme_on_every_callers_route(spec) -> None:
    """/docs shows an Authorize button, and each route says it needs the token."""
    scheme = spec["components"]["securitySchemes"]["HTTPBearer"]
    assert (scheme["type"], scheme["scheme"], scheme["bearerFormat"]) == (
        "http",
        "bearer",
        "JWT",
    )
    open_routes = {"/healthz", "/readyz", "/webhooks/payment"}
    for path, methods in spec["paths"].items():
        if path.startswith("/ops"):
            continue
        for method, operation in methods.items():
            declared = operation.get("security")
            if path in open_routes:
                assert declared is None, (method, path)
            else:
                assert declared == [{"HTTPBearer": []}], (method, path)
