"""configs/deploy: the files agree with each other and with the code that runs the same things here.

- the router runs with the flags of router.yaml in compose and in Kubernetes, in front of every engine;
- each engine runs the command `EngineProcess` builds from the GPU profile (serving/engine/process.py);
- gateway.env loads into `Settings` (unknown fields are errors) and points the gateway at the router,
  with the affinity header the router hashes on and the router's readiness path;
- secrets, probes, GPU requests and read-only weights are where they must be;
- scripts/validate_deploy.sh (docker-compose config, kubernetes-validate --strict) passes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml

from serving.engine.process import EngineProcess
from serving.engine.profiles import load_profile
from serving.settings import Settings, load_settings
from tests.deploy.router import REPO_ROOT, router_flags

pytestmark = pytest.mark.deploy

DEPLOY = REPO_ROOT / "configs" / "deploy"
MANIFESTS = DEPLOY / "kubernetes"
WEIGHTS = "/models/Phi-3-mini-4k-instruct"
# vllm-router's consistent_hash reads these headers first (its docs, "Hash Key Priority").
ROUTER_HASH_HEADERS = ["X-Session-ID", "X-User-ID", "X-Tenant-ID"]
GATEWAY_SECRETS = {"PLANSTACK_API_KEYS", "PLANSTACK_SECRET", "PLANSTACK_ENGINE__API_KEY", "PLANSTACK_RUNS__STORE_URL"}


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())  # type: ignore[no-any-return]


def manifests(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((MANIFESTS / name).read_text()) if doc]


def workload(name: str, kind: str) -> dict[str, Any]:
    return next(doc for doc in manifests(name) if doc["kind"] == kind)


def containers(name: str, kind: str) -> list[dict[str, Any]]:
    return workload(name, kind)["spec"]["template"]["spec"]["containers"]  # type: ignore[no-any-return]


def gateway_env() -> dict[str, str]:
    lines = (DEPLOY / "gateway.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line.strip() and not line.startswith("#"))


@pytest.fixture
def gateway_settings(monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name, value in gateway_env().items():
        monkeypatch.setenv(name, value)
    return load_settings()


def split_router_command(command: list[str]) -> tuple[dict[str, str], list[str], list[str]]:
    """(--host/--port/--prometheus-* values, worker URLs, the other flags) of a vllm-router command."""
    assert command[0] == "vllm-router"
    own, workers, flags = {}, [], []
    args = iter(command[1:])
    for arg in args:
        if arg == "--worker-urls":
            workers = [url for url in args if url.startswith("http://")]
            break
        key = arg.split("=", 1)[0]
        if key in ("--host", "--port", "--prometheus-host", "--prometheus-port"):
            own[key] = arg.split("=", 1)[1]
        else:
            flags.append(arg)
    rest = command[command.index("--worker-urls") + 1 + len(workers) :]
    return own, workers, flags + rest


def test_router_runs_with_the_flags_of_router_yaml_in_front_of_every_engine() -> None:
    services = compose()["services"]
    own, workers, flags = split_router_command(services["planstack-router"]["command"])
    assert flags == router_flags() and own["--port"] == "30000"
    engines = sorted(name for name in services if name.startswith("planstack-engine-"))
    assert workers == [f"http://{name}:8001" for name in engines] and len(engines) >= 2

    router = containers("router.yaml", "Deployment")[0]
    own, workers, flags = split_router_command(router["args"])
    assert flags == router_flags() and own["--port"] == "30000"
    replicas = workload("engines.yaml", "StatefulSet")["spec"]["replicas"]
    assert workers == [f"http://planstack-engine-{i}.planstack-engine:8001" for i in range(replicas)]
    service_ports = {port["name"]: port["port"] for port in workload("router.yaml", "Service")["spec"]["ports"]}
    assert service_ports["http"] == 30000
    assert yaml.safe_load((DEPLOY / "router.yaml").read_text())["policy"] == "consistent_hash"


def test_engines_run_the_command_of_the_gpu_profile(gateway_settings: Settings) -> None:
    gateway_settings.engine.host, gateway_settings.engine.port = "0.0.0.0", 8001  # the engine's own bind
    profile = load_profile(gateway_settings.engine.profile)
    expected = EngineProcess(gateway_settings, profile, Path(WEIGHTS)).command()
    expected[0] = "python"  # sys.executable here; the image's interpreter there
    assert compose()["x-engine"]["command"] == expected
    engine = containers("engines.yaml", "StatefulSet")[0]
    assert engine["args"] == expected
    env = {item["name"]: item.get("value") for item in engine["env"]}
    compile_timeout = str(gateway_settings.engine.grammar_compile_timeout_s)
    assert env["VLLM_REGEX_COMPILATION_TIMEOUT_S"] == compile_timeout
    assert compose()["x-engine"]["environment"]["VLLM_REGEX_COMPILATION_TIMEOUT_S"] == compile_timeout
    assert "VLLM_API_KEY" in env  # from the Secret


def test_gateway_env_points_the_gateway_at_the_router(gateway_settings: Settings) -> None:
    engine = gateway_settings.engine
    assert (engine.host, engine.port) == ("planstack-router", 30000)
    assert engine.health_path == "/readiness"
    assert engine.affinity_header == ROUTER_HASH_HEADERS[0]
    assert engine.profile == "phi3-mini-gpu" and str(engine.model_dir) == WEIGHTS
    assert gateway_settings.gateway.host == "0.0.0.0"  # inside the container; only this port is published
    assert not set(gateway_env()) & GATEWAY_SECRETS, "secrets belong in secrets/, not gateway.env"


def test_secrets_reach_the_gateways_and_engines_the_same_way_in_compose_and_kubernetes() -> None:
    doc = compose()
    gateway_targets = {secret["target"] for secret in doc["x-gateway"]["secrets"]}
    assert gateway_targets == GATEWAY_SECRETS
    assert {secret["target"] for secret in doc["x-engine"]["secrets"]} == {"VLLM_API_KEY"}
    assert set(doc["secrets"]) == {secret["source"] for secret in doc["x-gateway"]["secrets"]} | {"postgres_password"}

    keys = set(manifests("secrets.example.yaml")[0]["stringData"])
    references: dict[str, set[str]] = {}
    for name, kind in [("gateway.yaml", "Deployment"), ("engines.yaml", "StatefulSet"), ("postgres.yaml", "StatefulSet")]:
        for item in containers(name, kind)[0]["env"]:
            if "valueFrom" in item:
                ref = item["valueFrom"]["secretKeyRef"]
                assert ref["name"] == "planstack-secrets" and ref["key"] in keys, item
                references.setdefault(name, set()).add(item["name"])
    assert references["gateway.yaml"] == GATEWAY_SECRETS
    assert references["engines.yaml"] == {"VLLM_API_KEY"}

    # The run-store URL names the PostgreSQL of both deployments.
    store = urlparse(manifests("secrets.example.yaml")[0]["stringData"]["store-url"])
    assert (store.scheme, store.hostname, store.port, store.path) == ("postgresql", "planstack-postgres", 5432, "/planstack")
    assert "planstack-postgres" in doc["services"]
    assert workload("postgres.yaml", "Service")["spec"]["ports"][0]["port"] == store.port
    assert "@planstack-postgres:5432/planstack" in (DEPLOY / "make-secrets.sh").read_text()


def test_kubernetes_probes_gpus_and_read_only_weights() -> None:
    engine = containers("engines.yaml", "StatefulSet")[0]
    assert engine["resources"]["limits"]["nvidia.com/gpu"] == 1
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert engine[probe]["httpGet"]["path"] == "/health"
    gateway = containers("gateway.yaml", "Deployment")[0]
    assert gateway["readinessProbe"]["httpGet"]["path"] == "/health"
    assert gateway["envFrom"] == [{"configMapRef": {"name": "planstack-gateway"}}]
    for name, kind in [("engines.yaml", "StatefulSet"), ("gateway.yaml", "Deployment")]:
        spec = workload(name, kind)["spec"]["template"]["spec"]
        mounts = {m["name"]: m for m in spec["containers"][0]["volumeMounts"]}
        assert mounts["weights"]["readOnly"] is True and mounts["weights"]["mountPath"] == "/models"
        volume = next(v for v in spec["volumes"] if v["name"] == "weights")
        assert volume["persistentVolumeClaim"] == {"claimName": "planstack-weights", "readOnly": True}
        assert spec["securityContext"]["runAsNonRoot"] is True


def test_kustomization_applies_every_manifest_but_the_example_secret() -> None:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    present = {f"kubernetes/{path.name}" for path in MANIFESTS.glob("*.yaml")}
    assert listed == present - {"kubernetes/secrets.example.yaml"}
    assert kustomization["configMapGenerator"] == [{"name": "planstack-gateway", "envs": ["gateway.env"]}]


def test_validate_deploy_script_passes() -> None:
    result = subprocess.run(  # noqa: S603 - fixed argv
        ["bash", str(REPO_ROOT / "scripts" / "validate_deploy.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "PYTHON": sys.executable},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok   compose.yaml" in result.stdout and "ok   kubernetes/*.yaml" in result.stdout
