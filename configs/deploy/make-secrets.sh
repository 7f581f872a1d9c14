#!/bin/sh
# Create the secret files of configs/deploy/compose.yaml (and of the Kubernetes Secret, see the README
# "Scaling out"): random values, never overwriting a file that exists.
#
#   configs/deploy/make-secrets.sh [DIR]      (default: $PLANSTACK_SECRETS_DIR or /etc/planstack/secrets)
#
# Keep DIR outside the repository: the repository is the image's build context.
#
# api_keys          PLANSTACK_API_KEYS: one key for tenant "default"; edit to `key1=tenantA,key2=tenantB`
# hmac_secret       PLANSTACK_SECRET: the server secret cache salts are derived from (same on every gateway)
# engine_api_key    the engines' VLLM_API_KEY and the gateways' PLANSTACK_ENGINE__API_KEY
# postgres_password the PostgreSQL password, and store_url (PLANSTACK_RUNS__STORE_URL) that embeds it
#
# The folder is 0700; the files are 0444 because compose bind-mounts each file into containers that
# run as uid 10001 (gateway, engines) or 999 (PostgreSQL).
set -eu
dir=${1:-${PLANSTACK_SECRETS_DIR:-/etc/planstack/secrets}}
mkdir -p "$dir"
chmod 0700 "$dir"
random_hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }
write() {
  if [ -e "$dir/$1" ]; then echo "kept    $dir/$1"; return; fi
  umask 0377
  printf '%s' "$2" > "$dir/$1"
  chmod 0444 "$dir/$1"
  echo "created $dir/$1"
}
write api_keys "psk-$(random_hex 24)=default"
write hmac_secret "$(random_hex 32)"
write engine_api_key "$(random_hex 32)"
write postgres_password "$(random_hex 24)"
write store_url "postgresql://planstack:$(cat "$dir/postgres_password")@planstack-postgres:5432/planstack"
