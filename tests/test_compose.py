"""compose.yaml: valid by the Compose Specification's JSON Schema (vendored, see
tests/fixtures/compose-spec/SOURCE.md), and what the schema cannot say: every service has a
healthcheck, the app waits for a healthy database and queue, the GPU agent is opt-in."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = Path(__file__).parent / "fixtures" / "compose-spec" / "compose-spec.json"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    """compose.yaml as compose reads it (anchors and merge keys resolved)."""
    loaded: dict[str, Any] = YAML(typ="safe").load((ROOT / "compose.yaml").read_text())
    return loaded


def schema_errors(document: dict[str, Any]) -> list[str]:
    """Every way a compose document breaks the Compose Specification's schema."""
    schema = json.loads(SCHEMA.read_text())
    assert schema["$schema"].rstrip("#").endswith("draft-07/schema")  # the validator to use
    validator = jsonschema.Draft7Validator(schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


def test_compose_file_is_valid_by_the_compose_specification(compose):
    assert schema_errors(compose) == []


def test_the_schema_check_catches_a_misspelt_key(compose):
    broken = {**compose, "services": {**compose["services"], "redis": {"imag": "redis:7"}}}
    assert any("imag" in error for error in schema_errors(broken))


def test_every_service_has_a_healthcheck(compose):
    for name, service in compose["services"].items():
        check = service.get("healthcheck", {})
        assert check.get("test") and not check.get("disable"), name


def test_the_app_starts_after_a_healthy_database_and_queue(compose):
    depends_on = compose["services"]["app"]["depends_on"]
    for needed in ("postgres", "redis"):
        assert depends_on[needed]["condition"] == "service_healthy", needed


def test_the_app_runs_migrations_then_serves_on_the_queue_with_its_worker_count(compose):
    app = compose["services"]["app"]
    command = " ".join(app["command"])
    assert command.index("ranklab db upgrade") < command.index("ranklab serve")
    assert "--workers" in command and "RANKLAB_WEB_WORKERS:-2}" in command
    assert app["environment"]["RANKLAB_WEB_WORKERS"].endswith(":-2}")  # lab runs follow the bus
    assert app["environment"]["RANKLAB_QUEUE_URL"] == "redis://redis:6379/0"
    assert app["environment"]["DATABASE_URL"].startswith("postgresql://")
    assert "@postgres:5432/" in app["environment"]["DATABASE_URL"]


def test_agents_wait_for_a_healthy_queue_and_name_their_pool(compose):
    for name, pool in (("agent-cpu", "cpu"), ("agent-gpu", "gpu")):
        agent = compose["services"][name]
        assert agent["depends_on"]["redis"]["condition"] == "service_healthy", name
        assert agent["build"]["target"] == "agent", name
        assert agent["environment"]["RANKLAB_AGENT_POOL"] == pool, name
        # The sandbox writes cgroup limits: root, and on cgroup v2 the host's cgroup namespace.
        assert agent["privileged"] is True and agent["cgroup"] == "host", name


def test_the_gpu_agent_is_opt_in_and_reserves_nvidia_gpus(compose):
    services = compose["services"]
    assert services["agent-gpu"]["profiles"] == ["gpu"]
    assert all("profiles" not in services[name] for name in ("app", "postgres", "redis"))
    [device] = services["agent-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]


def test_secrets_come_from_the_environment_and_are_required(compose):
    text = (ROOT / "compose.yaml").read_text()
    for secret in ("RANKLAB_SECRET_KEY", "POSTGRES_PASSWORD"):
        assert re.search(r"\$\{" + secret + r":\?", text), secret  # compose refuses without it
    example = (ROOT / ".env.example").read_text()
    for name in ("RANKLAB_SECRET_KEY", "POSTGRES_PASSWORD", "RANKLAB_METRICS_TOKEN"):
        assert re.search(rf"^#? ?{name}=", example, re.MULTILINE), name


def dockerfile_stages() -> dict[str, str]:
    """Each named stage of the Dockerfile and its instructions."""
    text = (ROOT / "Dockerfile").read_text()
    parts = re.split(r"^FROM \S+ AS (\S+)\s*$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_built_target_exists_and_declares_a_healthcheck(compose):
    stages = dockerfile_stages()
    targets = {service["build"]["target"] for service in compose["services"].values()
               if "build" in service}  # fmt: skip
    assert targets == {"app", "agent"}
    for target in (*targets, "executor"):
        assert "HEALTHCHECK" in stages[target] and "CMD" in stages[target], target
