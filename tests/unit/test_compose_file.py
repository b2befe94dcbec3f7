"""docker-compose.yml is the production shape (issue #13), checked without docker:
valid by the compose specification's JSON schema (vendored by check-jsonschema),
every role present with a health check, a three-node JetStream cluster whose node
config the real nats-server accepts."""

from __future__ import annotations

import importlib.resources
import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from ruamel.yaml import YAML

from adapters.embedded.nats import nats_server_binary
from adapters.nats.authorization import role_users
from entrypoints.runtime import bootstrap

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
NODES = ("nats-1", "nats-2", "nats-3")


def load(text: str) -> Any:
    return YAML(typ="safe").load(text)  # resolves anchors and `<<` merges


@pytest.fixture(scope="module")
def compose() -> Any:
    return load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def compose_schema() -> jsonschema.protocols.Validator:
    vendored = importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
    schema = json.loads((vendored / "compose-spec.json").read_text())
    return jsonschema.validators.validator_for(schema)(schema)


def test_the_compose_file_is_valid_by_the_compose_specification(
    compose: Any, compose_schema: jsonschema.protocols.Validator
) -> None:
    errors = [e.message for e in compose_schema.iter_errors(compose)]
    assert errors == []


def test_the_schema_check_catches_a_mistake(
    compose_schema: jsonschema.protocols.Validator,
) -> None:
    """The check is not vacuous: a misspelt key and a wrong type are refused."""
    broken = load(COMPOSE.read_text().replace("healthcheck:", "healthchek:", 1))
    assert any("healthchek" in e.message for e in compose_schema.iter_errors(broken))
    broken = load(COMPOSE.read_text())
    broken["services"]["migrate"]["depends_on"]["postgres"]["condition"] = "ready"
    assert any("ready" in e.message for e in compose_schema.iter_errors(broken))


def test_every_role_runs_with_a_health_check(compose: Any) -> None:
    services = compose["services"]
    commands = {tuple(s.get("command", ())): name for name, s in services.items()}
    for role in bootstrap.ROLES:
        assert tuple(role.argv) in {c[: len(role.argv)] for c in commands}, role
    for name, service in services.items():
        if name != "migrate":  # it runs once and exits
            assert service.get("healthcheck", {}).get("test"), name
    assert services["relay"]["deploy"]["replicas"] == 2  # one publishes, one waits
    assert services["migrate"]["restart"] == "no"


def test_references_point_at_what_the_file_declares(compose: Any) -> None:
    services = compose["services"]
    volumes = set(compose["volumes"])
    for name, service in services.items():
        for needed in service.get("depends_on", {}):
            assert needed in services, (name, needed)
        for mount in service.get("volumes", ()):
            source = mount.split(":")[0]
            assert source.startswith("./") or source in volumes, (name, mount)
            if source.startswith("./"):
                assert (REPO / source).exists(), (name, mount)


def test_three_nats_nodes_each_with_its_name_and_store(compose: Any) -> None:
    services = compose["services"]
    names, stores = set(), set()
    for node in NODES:
        service = services[node]
        names.add(service["environment"]["CLUB_NATS_SERVER_NAME"])
        stores.add(next(m for m in service["volumes"] if m.endswith(":/data")))
        assert "./deploy/nats-cluster.conf:/etc/nats/club.conf:ro" in service["volumes"]
        assert "./deploy/nats.conf:/etc/nats/nats.conf:ro" in service["volumes"]
        assert services["migrate"]["depends_on"][node] == {
            "condition": "service_healthy"
        }
    assert names == set(NODES)
    assert len(stores) == len(NODES)


def test_every_role_knows_every_node_and_keeps_three_replicas(compose: Any) -> None:
    for name, service in compose["services"].items():
        env = service.get("environment", {})
        if "CLUB_NATS_URL" not in env:
            continue
        urls = env["CLUB_NATS_URL"].split(",")
        assert [url.rsplit("@", 1)[1] for url in urls] == [
            f"{node}:4222" for node in NODES
        ], name
        assert len({url.split("@")[0] for url in urls}) == 1, name  # one user
        assert env["CLUB_NATS_REPLICAS"] == "3", name


def _node_env(server_name: str) -> dict[str, str]:
    users = role_users(bootstrap.CONSUMERS)
    passwords = {
        f"CLUB_NATS_{u.name.upper().replace('-', '_')}_PASSWORD": "pw" for u in users
    }
    return {"CLUB_NATS_SERVER_NAME": server_name, **passwords}


@pytest.mark.parametrize("node", NODES)
def test_the_real_nats_server_accepts_each_node_config(node: str) -> None:
    answer = subprocess.run(
        [str(nats_server_binary()), "-c", str(REPO / "deploy/nats-cluster.conf"), "-t"],
        env=_node_env(node), capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr


def test_a_node_config_without_the_users_passwords_is_refused() -> None:
    """The node config really includes deploy/nats.conf and its authorization."""
    answer = subprocess.run(
        [str(nats_server_binary()), "-c", str(REPO / "deploy/nats-cluster.conf"), "-t"],
        env={"CLUB_NATS_SERVER_NAME": "nats-1"}, capture_output=True, text=True,
        timeout=30, check=False,
    )  # fmt: skip
    assert answer.returncode != 0
    assert "CLUB_NATS_ADMIN_PASSWORD" in answer.stderr


def test_every_node_fsyncs_before_it_acks() -> None:
    cluster = (REPO / "deploy/nats-cluster.conf").read_text()
    single = (REPO / "deploy/nats.conf").read_text()
    assert "include ./nats.conf" in cluster
    assert "sync_interval: always" in single
    assert "store_dir: /data" in single
