#!/usr/bin/env bash
# Validate the deployment files in configs/deploy with tools that install from the package registries:
#
#   1. compose.yaml   `docker-compose config` (Debian's docker-compose 1.29; `docker compose` if present).
#                     Installed with apt-get when missing and we are root (no recommends: ~15 small
#                     Python packages, no Docker daemon); the resolved file is then checked for the
#                     parts a merge key could drop silently (env_file, secrets, GPUs, health checks).
#   2. Kubernetes     `kubernetes-validate --strict` (PyPI, pinned in scripts/requirements/common.txt):
#                     every manifest in configs/deploy/kubernetes against the API schemas the package
#                     ships (unknown fields are errors); and the kustomize build of
#                     configs/deploy/kustomization.yaml when kubectl is on PATH (skipped otherwise).
#
# What this cannot run here: building the image, starting the stack (no Docker daemon, no cluster,
# no GPU), `helm` (not packaged on PyPI, Debian or npm; the manifests are plain + kustomize).
#
#   scripts/validate_deploy.sh          exit 0 when every check that ran passed
#   PYTHON=/path/to/python              interpreter with kubernetes-validate (default .venv/bin/python)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
deploy="$repo/configs/deploy"
python=${PYTHON:-$repo/.venv/bin/python}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

compose_cmd() {
  if command -v docker-compose >/dev/null 2>&1; then
    echo docker-compose
  elif docker compose version >/dev/null 2>&1; then
    echo "docker compose"
  fi
}

cmd=$(compose_cmd)
if [ -z "$cmd" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "validate_deploy: installing docker-compose (Debian) for \`docker-compose config\`" >&2
  apt_install() {
    flock /tmp/planstack-apt.lock env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
  }
  apt_install || { flock /tmp/planstack-apt.lock apt-get update -qq >/dev/null && apt_install; }
  cmd=$(compose_cmd)
fi
if [ -z "$cmd" ]; then
  echo "validate_deploy: no docker-compose; install it (apt-get install docker-compose) and re-run" >&2
  exit 2
fi

# 1. compose: syntax and schema, then the resolved file (with placeholder secrets, as in production).
mkdir -p "$work/secrets"
"$deploy/make-secrets.sh" "$work/secrets" >/dev/null
cp -r "$deploy"/compose.yaml "$deploy"/gateway.env "$work"/
(cd "$work" && PLANSTACK_WEIGHTS_DIR=/srv/models PLANSTACK_SECRETS_DIR="$work/secrets" $cmd -f compose.yaml config) > "$work/resolved.yaml"
"$python" - "$work/resolved.yaml" <<'EOF'
import sys

import yaml


def mounts_models_read_only(volumes):  # short syntax (docker-compose 1.x) or long (docker compose 2)
    return any(
        volume.endswith(":/models:ro") if isinstance(volume, str)
        else volume.get("target") == "/models" and volume.get("read_only") is True
        for volume in volumes
    )


services = yaml.safe_load(open(sys.argv[1]))["services"]
expected = {"planstack-postgres", "planstack-router", "planstack-gateway-a", "planstack-gateway-b",
            "planstack-engine-0", "planstack-engine-1"}
assert set(services) == expected, sorted(services)
for name, service in services.items():
    assert "healthcheck" in service, f"{name}: no health check"
    if name.startswith("planstack-gateway"):
        env = service["environment"]
        assert env["PLANSTACK_ENGINE__HOST"] == "planstack-router", f"{name}: env_file not applied"
        targets = {secret["target"] for secret in service["secrets"]}
        assert {"PLANSTACK_API_KEYS", "PLANSTACK_SECRET", "PLANSTACK_ENGINE__API_KEY"} <= targets, name
        assert mounts_models_read_only(service["volumes"]), f"{name}: weights not read-only"
    if name.startswith("planstack-engine"):
        devices = service["deploy"]["resources"]["reservations"]["devices"]
        assert devices and devices[0]["capabilities"] == ["gpu"], f"{name}: no GPU reserved"
        assert {secret["target"] for secret in service["secrets"]} == {"VLLM_API_KEY"}, name
        assert mounts_models_read_only(service["volumes"]), f"{name}: weights not read-only"
        assert "ports" not in service, f"{name}: an engine must not publish a port"
print(f"compose: {len(services)} services resolved and checked")
EOF
echo "ok   compose.yaml ($cmd config)"

# 2. Kubernetes manifests, strictly, one by one; then the kustomize build if kubectl can make it.
"$python" -m kubernetes_validate --strict --quiet "$deploy"/kubernetes/*.yaml
echo "ok   kubernetes/*.yaml (kubernetes-validate --strict, $(ls "$deploy"/kubernetes/*.yaml | wc -l) files)"
if command -v kubectl >/dev/null 2>&1 && kubectl kustomize "$deploy" > "$work/kustomized.yaml" 2>"$work/kustomize.err"; then
  "$python" -m kubernetes_validate --strict --quiet "$work/kustomized.yaml"
  echo "ok   kustomization.yaml (kubectl kustomize + kubernetes-validate --strict)"
else
  echo "skip kustomization.yaml: kubectl kustomize not available ($(head -c 200 "$work/kustomize.err" 2>/dev/null || true))"
fi
