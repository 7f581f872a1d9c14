#!/bin/sh
# Container entrypoint: export each file directly in /run/secrets (compose secrets) as an environment
# variable named after the file, then exec the command. Only names that are valid variable names
# are read (so Kubernetes' /run/secrets/kubernetes.io/ folder is skipped); Kubernetes passes its
# secrets as environment variables (secretKeyRef) and needs none of this.
set -eu
dir=${PLANSTACK_SECRETS_DIR:-/run/secrets}
if [ -d "$dir" ]; then
  for file in "$dir"/*; do
    [ -f "$file" ] || continue
    name=$(basename "$file")
    case "$name" in
      [!A-Za-z_]* | *[!A-Za-z0-9_]*) continue ;;
    esac
    value=$(cat "$file")
    export "$name=$value"
  done
fi
exec "$@"
