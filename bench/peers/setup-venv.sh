#!/usr/bin/env bash
# Creates or updates the Python venv of the peer benchmarks (numpy, torch for the CPU, tensorboard,
# threadpoolctl) and prints its python on the last line, so callers can do
#   py=$(bench/peers/setup-venv.sh | tail -n1)
# Usage: setup-venv.sh [DIR]   (default bench/peers/.venv). Fast when everything is installed.
# torch comes from PyPI; set PEERS_TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu for the
# much smaller CPU-only wheel. PEERS_UPGRADE=1 upgrades the packages already installed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${1:-$here/.venv}
base_python=${PYTHON:-python3}
packages=(numpy torch torchvision tensorboard threadpoolctl)

if [[ ! -x $dir/bin/python ]]; then
  echo "setup-venv: creating $dir with $base_python" >&2
  if ! "$base_python" -m venv "$dir" >&2; then
    echo "setup-venv: '$base_python -m venv $dir' failed" \
      "(on Debian: apt-get install python3-venv)" >&2
    exit 1
  fi
fi
dir=$(cd "$dir" && pwd)
py=$dir/bin/python

# Which of the packages are missing (package metadata only: no slow `import torch`).
missing=$("$py" - "${packages[@]}" <<'EOF'
import sys
from importlib import metadata
for name in sys.argv[1:]:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        print(name)
EOF
)

pip_install() { "$py" -m pip install --disable-pip-version-check --quiet "$@" >&2; }

if [[ ${PEERS_UPGRADE:-0} == 1 ]]; then
  missing="${packages[*]}"
  upgrade=(--upgrade)
else
  upgrade=()
fi
if [[ -n $missing ]]; then
  echo "setup-venv: installing into $dir: ${missing//$'\n'/ }" >&2
  others=()
  for p in $missing; do
    if [[ $p == torch && -n ${PEERS_TORCH_INDEX_URL:-} ]]; then
      pip_install "${upgrade[@]}" --index-url "$PEERS_TORCH_INDEX_URL" torch
    else
      others+=("$p")
    fi
  done
  if ((${#others[@]})); then
    pip_install "${upgrade[@]}" "${others[@]}"
  fi
fi

"$py" - "${packages[@]}" >&2 <<'EOF'
import sys
from importlib import metadata
print("setup-venv: " + ", ".join(f"{n} {metadata.version(n)}" for n in sys.argv[1:]))
EOF
echo "$py"
