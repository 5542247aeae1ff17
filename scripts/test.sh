#!/usr/bin/env bash
# Runs the whole test suite on an existing build folder (default: build).
set -euo pipefail
BUILD=${1:-build}
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)"
