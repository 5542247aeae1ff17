#!/usr/bin/env bash
# Creates (or reuses) a Python virtualenv holding the `tensorboard` package from PyPI, so the tests
# can read our event files back with TensorBoard's own reader. Called by scripts/install-deps.sh
# (the set-up step of `make test`); scripts/test.sh only uses the venv. Idempotent: when the venv
# already imports tensorboard nothing is downloaded (set TB_VENV_UPGRADE=1 to upgrade it anyway).
# Usage: scripts/tb-venv.sh [DIR]   (default .venv-tb). The last line printed is the interpreter:
#   export NNPERF_PYTHON=$(scripts/tb-venv.sh | tail -n 1)
set -euo pipefail
VENV=${1:-.venv-tb}
PY="$VENV/bin/python"

if [ -x "$PY" ] && [ "${TB_VENV_UPGRADE:-0}" != "1" ] && "$PY" -c "import tensorboard" >/dev/null 2>&1; then
  echo "tb-venv: $VENV already has tensorboard $("$PY" -c 'import tensorboard; print(tensorboard.__version__)')" >&2
else
  if [ ! -x "$PY" ]; then
    echo "tb-venv: creating $VENV" >&2
    if ! python3 -m venv "$VENV" >&2; then
      echo "tb-venv: 'python3 -m venv' failed; on Debian install python3-venv (scripts/install-deps.sh)" >&2
      exit 1
    fi
  fi
  echo "tb-venv: installing tensorboard into $VENV" >&2
  "$PY" -m pip install --quiet --disable-pip-version-check --upgrade tensorboard >&2
  "$PY" -c "import tensorboard" # fail loudly if the install did not work
fi
echo "$(cd "$VENV" && pwd)/bin/python"
