#!/usr/bin/env bash
# Packs what a lent GPU machine (the library's `device` tool; see docs/gpu.md) needs to run the
# CUDA backend's tests and benchmarks from a build made here: the nnperf and test_gpu binaries
# (stripped) and the shared libraries they load that are not part of glibc or the CUDA stack
# (OpenBLAS, FFTW, fmt, libgomp, libstdc++...; the device brings its own CUDA, cuBLAS and cuDNN)
# in one xz archive, the Fashion-MNIST files (as they are, already gzip), the peer scripts, and
# run.sh (scripts/gpu_run.sh), which unpacks the archive there, runs everything and leaves its
# logs under $OUT. Tested without a GPU by tests/scripts/gpu_bundle_test.sh.
#   scripts/gpu_bundle.sh [BUILD] [DEST]   (defaults: build, .gpu)
# Then, with the device tool: run(command="bash .gpu/run.sh [STAGE...]", carry=[".gpu"]).
# The device tool sends at most 64 MiB of working tree: the bundle is about 42 MB.
set -euo pipefail
BUILD=${1:-build}
DEST=${2:-.gpu}
DATA=${NNPERF_DATA:-/usr/share/datasets/fashion-mnist}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
bins=("$BUILD/nnperf" "$BUILD/tests/test_gpu" "$BUILD/tests/test_apps")
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "gpu_bundle: $b is missing: build with the CUDA backend first" >&2; exit 1; }
done
if ! "$BUILD/nnperf" bench gemm --help | grep -q -- "--device"; then
  echo "gpu_bundle: $BUILD/nnperf has no --device flag" >&2; exit 1
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for b in "${bins[@]}"; do strip -o "$stage/bin/$(basename "$b")" "$b"; done
# The stand-in NVIDIA library of the probe tests (found there through $NNPERF_FAKE_CUDA_LIB).
[ -f "$BUILD/tests/libnnperf_fake_cuda.so" ] && cp "$BUILD/tests/libnnperf_fake_cuda.so" "$stage/bin/"
# Shared libraries: everything ldd resolves except glibc's own and NVIDIA's.
ldd "${bins[@]}" | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*) ;;
    libcuda.so*|libcudart*|libcublas*|libcudnn*|libnvidia*|libnvrtc*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
rm -rf "$DEST"
mkdir -p "$DEST/share" "$DEST/data"
tar -C "$stage" -cJf "$DEST/payload.tar.xz" bin lib
cp bench/peers/gemm_torch_cuda.py bench/peers/mlp_torch.py bench/peers/peer_common.py \
  bench/peers/conv_torch.py bench/peers/train_torch.py bench/peers/nnperf_format.py \
  bench/peers/train_layers_torch.py bench/peers/batchnorm_torch.py bench/conv_layers.txt \
  scripts/ncu_profile.sh scripts/gpu_conv_table.py scripts/train_layers_table.py \
  scripts/batchnorm_table.py scripts/step_log_compare.py "$DEST/"
cp share/ncu-roofline-metrics.txt "$DEST/share/"
if ls "$DATA"/*-ubyte* > /dev/null 2>&1; then
  cp "$DATA"/*-ubyte* "$DEST/data/"
else
  echo "gpu_bundle: no Fashion-MNIST files in $DATA: the real-data stages will be skipped there" >&2
fi
cp scripts/gpu_run.sh "$DEST/run.sh"
chmod +x "$DEST/run.sh"
du -sh "$DEST" | awk '{print "gpu_bundle: " $1 " in '"$DEST"'"}'
