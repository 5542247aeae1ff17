#!/usr/bin/env bash
# Installs everything nnperf needs on a Debian 12 machine: compilers' libraries from Debian
# packages and the real Fashion-MNIST data set (dataset-fashion-mnist -> /usr/share/datasets/).
# Idempotent: packages already present are skipped without touching the network.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git
  libopenblas-dev libfftw3-dev nlohmann-json3-dev libcli11-dev libfmt-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev libomp-dev libdnnl-dev
  gnuplot-nox dataset-fashion-mnist python3 python3-venv
  clang libclang-rt-dev
)
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
