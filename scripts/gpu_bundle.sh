#!/usr/bin/env bash
# Packs what a lent GPU machine (the library's `device` tool; see docs/gpu.md) needs to run the
# CUDA backend's tests and benchmarks from a build made here: the nnperf binary, the GPU test
# binaries, the shared libraries they load that are not part of glibc or the CUDA stack (OpenBLAS,
# FFTW, fmt, libgomp, libstdc++...; the device brings its own CUDA, cuBLAS and cuDNN), the GEMM
# peer script, and run.sh, which runs everything there and leaves its logs under $OUT.
#   scripts/gpu_bundle.sh [BUILD] [DEST]   (defaults: build, .gpu)
# Then, with the device tool: run(command="bash .gpu/run.sh [STAGE...]", carry=[".gpu"]).
set -euo pipefail
BUILD=${1:-build}
DEST=${2:-.gpu}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
bins=("$BUILD/nnperf" "$BUILD/tests/test_gpu" "$BUILD/tests/test_kernels")
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "gpu_bundle: $b is missing: build with the CUDA backend first" >&2; exit 1; }
done
if ! "$BUILD/nnperf" bench gemm --help | grep -q -- "--device"; then
  echo "gpu_bundle: $BUILD/nnperf has no --device flag" >&2; exit 1
fi
rm -rf "$DEST"
mkdir -p "$DEST/bin" "$DEST/lib"
cp "${bins[@]}" "$DEST/bin/"
cp bench/peers/gemm_torch_cuda.py bench/peers/mlp_torch.py bench/peers/peer_common.py \
  bench/peers/conv_torch.py bench/peers/train_torch.py bench/peers/nnperf_format.py \
  scripts/ncu_profile.sh "$DEST/"
mkdir -p "$DEST/share" && cp share/ncu-roofline-metrics.txt "$DEST/share/"
# Shared libraries: everything ldd resolves except glibc's own and NVIDIA's.
ldd "${bins[@]}" | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*) ;;
    libcuda.so*|libcudart*|libcublas*|libcudnn*|libnvidia*|libnvrtc*) ;;
    *) cp -L "$lib" "$DEST/lib/" ;;
  esac
done
cat > "$DEST/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs on the GPU machine from the repository root; logs go to $OUT (or .gpu/out).
#   bash .gpu/run.sh [STAGE...]   stages: tests peaks gemm mlp conv profile train ncu (default: all, in
#   that order); every command is cut after $STEP_TIMEOUT seconds (default 240), so one hang
#   cannot eat the device time of the others; summary.txt gets each command's rc and seconds.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/out}
mkdir -p "$out"
# The device's own CUDA libraries first (toolkit, then PyTorch's wheels for cuDNN), ours after.
cuda_libs=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib 2>/dev/null | paste -sd:)
torch_libs=$(python3 -c 'import os, nvidia; p = os.path.dirname(nvidia.__path__[0]); print(":".join(os.path.join(r, d) for r, ds, _ in os.walk(p) for d in ds if d == "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$cuda_libs:$torch_libs:$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nn="$here/bin/nnperf"
# step NAME LOG CMD...: runs CMD under the step timeout, appending to LOG; rc and seconds to summary.
step() {
  local name=$1 log=$2 t0=$SECONDS rc
  shift 2
  timeout "${STEP_TIMEOUT:-240}" "$@" >> "$log" 2>&1
  rc=$?
  echo "$name rc=$rc $((SECONDS - t0))s" >> "$out/summary.txt"
}

stage_tests() {
  { nvidia-smi; nvcc --version; "$nn" devices --check-cuda; } > "$out/device.txt" 2>&1
  step test_gpu "$out/test_gpu.log" "$here/bin/test_gpu" --gtest_output=json:"$out/test_gpu.json"
  grep -E "^\[  (FAILED|SKIPPED) \]|Failure" "$out/test_gpu.log" | head -40
}
# The device's ceilings (FMA, L2 and device-memory bandwidth, SGEMM) into a peaks.json env.
stage_peaks() { step peaks "$out/peaks.log" "$nn" peaks --device cuda --out "$out/peaks.json" --env gpu; tail -n 12 "$out/peaks.log"; }
stage_gemm() {
  for n in 1024 4096; do
    step "bench gemm $n" "$out/bench.log" "$nn" bench gemm --device cuda --problem "m${n}n${n}k${n}" --measure 20 --json "$out/bench_gemm_$n.json"
    step "torch.mm $n" "$out/bench.log" python3 "$here/gemm_torch_cuda.py" --sizes "$n" --measure 20
    step "bench gemm $n (again)" "$out/bench.log" "$nn" bench gemm --device cuda --problem "m${n}n${n}k${n}" --measure 20
  done
  tail -n 40 "$out/bench.log"
}
# The MLP on the GPU (784-128-128-128-10, batches 64 and 1024): nnperf's cuda/cublas rows beside
# blas, then the PyTorch CUDA peer where the Fashion-MNIST files are there to feed it.
stage_mlp() {
  step mlp-bench "$out/mlp.log" "$nn" mlp-bench --device cuda --impls blas,cuda,cublas --batch-sizes 64,1024 --synthetic --overhead-reps 0 --out-dir "$out/mlp_bench"
  for dev in cuda cpu; do
    step "train --device $dev" "$out/mlp.log" "$nn" train --device "$dev" --synthetic --epochs 3 --warmup-epochs 1 --progress lines --no-tensorboard --out-dir "$out/train_$dev"
  done
  if [ -d /usr/share/datasets/fashion-mnist ]; then
    step mlp_torch "$out/mlp.log" python3 "$here/mlp_torch.py" --device cuda --iters-bench --hidden 128,128,128 --bench-batches 64,1024 --json "$out/mlp_torch_cuda.json"
  else
    echo "mlp_torch.py: no /usr/share/datasets/fashion-mnist on this machine" >> "$out/mlp.log"
  fi
  tail -n 30 "$out/mlp.log"
}
# cuDNN's forward algorithms on ResNet-50 layers at batch 1 and 32, alternating with PyTorch
# (cudnn.benchmark = True, TF32 off).
stage_conv() {
  for prob in mb1ic64ih56oc64kh3ph1 mb32ic64ih56oc64kh3ph1 mb1ic256ih56oc64kh1 mb32ic512ih7oc512kh3ph1; do
    step "bench conv2d $prob" "$out/conv.log" "$nn" bench conv2d --device cuda --problem "$prob" --measure 20 --json "$out/conv_$prob.json"
    step "conv_torch $prob" "$out/conv.log" python3 "$here/conv_torch.py" --device cuda --problem "$prob" --variants nchw --measure 20 --json "$out/conv_torch_$prob.json"
  done
  tail -n 40 "$out/conv.log"
}
# Whole models on the GPU: VGG-16 and ResNet-50 at batch 1 and 32, cuDNN's find, per-layer and
# whole-model times by CUDA events, NVML energy per inference.
stage_profile() {
  for model in vgg16 resnet50; do
    for mb in 1 32; do
      step "profile $model mb$mb" "$out/profile.log" "$nn" profile --device cuda --model "$model" --algorithm find --sizes 224 --batch-size "$mb" --warmup 5 --measure 20 --progress lines --output-dir "$out/profile_${model}_mb$mb"
    done
  done
  tail -n 20 "$out/profile.log"
}
# CNN training on the GPU (the fixed-iteration driver), alternating with PyTorch's on the same
# shapes (TF32 off, cudnn.benchmark as --algorithm find): ResNet-18 at batch 32 on 32x32 and
# ResNet-50 at batch 32 on 224x224.
stage_train() {
  for round in 1 2; do
    for cfg in "resnet18 32 32" "resnet50 32 224"; do
      set -- $cfg
      step "train --device cuda $1 b$2 s$3 ($round)" "$out/train.log" "$nn" train --device cuda --model "$1" --synthetic --iters 20 --warmup-iters 5 --batch-size "$2" --input-size "$3" --algorithm find --label "gpu_$round" --log-dir "$out/train_logs"
      step "torch train $1 b$2 s$3 ($round)" "$out/train.log" python3 "$here/train_torch.py" --device cuda --cudnn-benchmark --model "$1" --iters 20 --warmup-iters 5 --batch-size "$2" --input-size "$3" --num-classes 1000 --in-channels 3
    done
  done
  grep -E "MEASURED_SEC|error" "$out/train.log" | tail -n 16
}
# Nsight Compute over one ResNet-50 forward pass (batch 1), its counter roofline under the
# ceilings measured by the peaks stage (env gpu of peaks.json; measured here if absent).
stage_ncu() {
  command -v ncu > /dev/null || { echo "ncu: not on PATH" >> "$out/summary.txt"; return; }
  mkdir -p "$here/scripts" && cp "$here/ncu_profile.sh" "$here/scripts/"
  local peaks=()
  [ -s "$out/peaks.json" ] && peaks=("$out/peaks.json" gpu)
  step ncu "$out/ncu.log" bash "$here/scripts/ncu_profile.sh" "$nn" "$out/ncu" resnet50 1 224 "${peaks[@]}"
  tail -n 20 "$out/ncu.log"
}

stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(tests peaks gemm mlp conv profile train ncu)
for s in "${stages[@]}"; do
  case "$s" in
    tests|peaks|gemm|mlp|conv|profile|train|ncu) "stage_$s" ;;
    *) echo "run.sh: unknown stage '$s' (tests peaks gemm mlp conv profile train ncu)" >&2; exit 2 ;;
  esac
done
cat "$out/summary.txt"
RUN
chmod +x "$DEST/run.sh"
du -sh "$DEST" | awk '{print "gpu_bundle: " $1 " in '"$DEST"'"}'
