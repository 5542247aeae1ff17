#!/usr/bin/env bash
# Installs everything nnperf needs on a Debian 12 machine: compilers' libraries from Debian
# packages and the real Fashion-MNIST data set (dataset-fashion-mnist -> /usr/share/datasets/).
# Idempotent: packages already present are skipped without touching the network.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git
  libopenblas-dev libopenblas-openmp-dev libfftw3-dev nlohmann-json3-dev libcli11-dev libfmt-dev zlib1g-dev
  libjpeg62-turbo-dev libpng-dev
  libgtest-dev libgmock-dev libbenchmark-dev libomp-dev libdnnl-dev
  gnuplot-nox dataset-fashion-mnist python3 python3-venv
  clang libclang-rt-dev
)
# Test-only: the headless browser that opens report.html (scripts/check_report_html.py), a
# single-node Slurm cluster for the sweep test (tests/slurm, started with scripts/slurm-local.sh)
# and the locale definitions for the comma-decimal locale the CSV writer is tested under.
if [ "${1:-}" != "--no-test-deps" ]; then
  PKGS+=(chromium fonts-dejavu-core slurmctld slurmd slurm-client munge locales)
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all Debian packages present"
fi

# de_DE.UTF-8 (decimal comma), for the test that numbers in CSV files stay locale-free
# (tests/io/csv_test.cc); compiled once, where no such locale exists yet.
if [ "${1:-}" != "--no-test-deps" ] && ! locale -a 2>/dev/null | grep -qix 'de_DE.utf8'; then
  SUDO=""
  if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
  $SUDO localedef -i de_DE -f UTF-8 de_DE.UTF-8
fi

# TensorBoard, for the test that reads our event files back with TensorBoard's own reader. Debian
# 12 has no TensorBoard package (nor TensorFlow), so it comes from PyPI into the project-local
# virtualenv .venv-tb, here in the set-up step: the tests only use it and never download.
# Skipped when the venv already imports tensorboard; `--no-test-deps` (what `make run` passes)
# skips it altogether. A failure here (no network) is a warning: scripts/test.sh then skips that
# one test, or fails under CI=true.
if [ "${1:-}" != "--no-test-deps" ]; then
  ROOT=$(cd "$(dirname "$0")/.." && pwd)
  if ! bash "$ROOT/scripts/tb-venv.sh" "$ROOT/.venv-tb" >/dev/null; then
    echo "install-deps: warning: could not install tensorboard into $ROOT/.venv-tb (is PyPI reachable?); scripts/test.sh needs it under CI=true" >&2
  fi
fi
