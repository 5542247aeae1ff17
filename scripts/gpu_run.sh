#!/usr/bin/env bash
# The GPU machine's side of scripts/gpu_bundle.sh (copied into the bundle as run.sh): runs from
# the repository root there; logs go to $OUT (or .gpu/out); the payload is unpacked into
# $NNPERF_GPU_WORK (default /tmp/nnperf-gpu) when it is newer than the last unpacking.
#   bash .gpu/run.sh [STAGE...]   stages: tests gemm mlp profile bn train cnn peaks real conv ncu
#   sanitize (default: all, in that order), and cnnpair (only when named); $TEST_SUITES (an
#   extended regex) picks the suites of stage tests. Every command is cut after $STEP_TIMEOUT
#   seconds (default 120) and none starts after $DEADLINE seconds from the start (default 540),
#   so one hang cannot eat the device time of the others; summary.txt gets each command's rc and
#   seconds.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/out}
mkdir -p "$out"
work=${NNPERF_GPU_WORK:-/tmp/nnperf-gpu}
case $work in /*/*) ;; *) echo "run.sh: NNPERF_GPU_WORK '$work': expected a folder two levels below /" >&2; exit 2 ;; esac
if [ "$here/payload.tar.xz" -nt "$work/.unpacked" ]; then
  rm -rf "$work" && mkdir -p "$work" && tar -C "$work" -xJf "$here/payload.tar.xz" ||
    { echo "run.sh: cannot unpack payload" >&2; exit 1; }
  touch "$work/.unpacked"
  # The machine's own C++ runtime where it is as new as ours (the tools run beside our binaries,
  # compute-sanitizer and ncu, need theirs).
  for sys in /lib/x86_64-linux-gnu/libstdc++.so.6 /usr/lib/x86_64-linux-gnu/libstdc++.so.6; do
    if [ -f "$sys" ] && grep -aq GLIBCXX_3.4.30 "$sys"; then rm -f "$work/lib/libstdc++.so.6" "$work/lib/libgcc_s.so.1"; break; fi
  done
fi
# The device's own CUDA libraries (toolkit, then the PyTorch wheels' cuDNN and the rest), ours
# after; only for our binaries (python3's torch keeps the machine's own libstdc++).
cuda_libs=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib 2>/dev/null | paste -sd:)
wheel_libs=$(python3 -c 'import os, nvidia; print(":".join(os.path.join(r, d) for p in nvidia.__path__ for r, ds, _ in os.walk(p) for d in ds if d == "lib"))' 2>/dev/null || true)
ld="$cuda_libs:$wheel_libs:$work/lib"
nn=(env "LD_LIBRARY_PATH=$ld" "$work/bin/nnperf")
tg=(env "LD_LIBRARY_PATH=$ld" "NNPERF_FAKE_CUDA_LIB=$work/bin/libnnperf_fake_cuda.so" "$work/bin/test_gpu")
data="$here/data"
t_start=$SECONDS
# step NAME LOG CMD...: runs CMD under the step timeout (or what is left before the deadline),
# appending to LOG; rc and seconds to summary.txt.
step() {
  local name=$1 log=$2 t0=$SECONDS rc left
  shift 2
  left=$(( ${DEADLINE:-540} - (SECONDS - t_start) ))
  if [ "$left" -lt 5 ]; then echo "$name skipped (deadline)" >> "$out/summary.txt"; return; fi
  [ "$left" -gt "${STEP_TIMEOUT:-120}" ] && left=${STEP_TIMEOUT:-120}
  echo "=== $name" >> "$log"
  timeout "$left" "$@" >> "$log" 2>&1
  rc=$?
  echo "$name rc=$rc $((SECONDS - t0))s" >> "$out/summary.txt"
}

# The device, the libraries found, then every GPU test suite in its own process (a kernel fault
# ends its own suite only).
stage_tests() {
  { nvidia-smi; nvcc --version; echo "LD_LIBRARY_PATH for nnperf: $ld"; ls $(echo "$wheel_libs" | tr : ' ') 2>/dev/null | grep -E "cudnn|cublas" | head -20
    "${nn[@]}" devices --check-cuda; } > "$out/device.txt" 2>&1
  local s
  mkdir -p "$out/tests"
  for s in $("${tg[@]}" --gtest_list_tests | grep -v '^ ' | grep -v '^Running' | grep -E "${TEST_SUITES:-.}"); do
    step "test ${s%.}" "$out/test_gpu.log" "${tg[@]}" --gtest_filter="${s}*" --gtest_output=json:"$out/tests/$(echo "${s%.}" | tr / _).json"
  done
  # The command-line tests with GPU branches, on our binary.
  step "test_apps GPU" "$out/test_gpu.log" env "LD_LIBRARY_PATH=$ld" "NNPERF_BINARY=$work/bin/nnperf" \
    "$work/bin/test_apps" --gtest_filter='GpuCli*:BenchGemmCli.*Gpu*:BenchGemmCli.Conv2d*' \
    --gtest_output=json:"$out/tests/apps_gpu.json"
  grep -E "^\[  (FAILED|SKIPPED) \]|Failure|PASSED" "$out/test_gpu.log" | head -60
}
stage_gemm() {
  for n in 1024 4096; do
    step "bench gemm $n" "$out/gemm.log" "${nn[@]}" bench gemm --device cuda --problem "m${n}n${n}k${n}" --measure 20 --json "$out/bench_gemm_$n.json"
  done
  step "torch.mm" "$out/gemm.log" python3 "$here/gemm_torch_cuda.py" --sizes 1024,4096 --measure 20 --json "$out/gemm_torch.json"
  for n in 1024 4096; do
    step "bench gemm $n (again)" "$out/gemm.log" "${nn[@]}" bench gemm --device cuda --problem "m${n}n${n}k${n}" --measure 20
  done
  step "torch.mm (again)" "$out/gemm.log" python3 "$here/gemm_torch_cuda.py" --sizes 1024,4096 --measure 20
}
# The MLP on the GPU (784-128-128-128-10, batches 64 and 1024): nnperf's cuda/cublas rows beside
# blas (16 threads), accuracy consistency on Fashion-MNIST, then the PyTorch CUDA peer.
stage_mlp() {
  step mlp-bench "$out/mlp.log" "${nn[@]}" mlp-bench --device cuda --impls blas,cuda,cublas --batch-sizes 64,1024 --data "$data" --overhead-reps 0 --out-dir "$out/mlp_bench"
  step mlp_torch "$out/mlp.log" python3 "$here/mlp_torch.py" --device cuda --iters-bench --bench-batches 64,1024 --data-dir "$data" --json "$out/mlp_torch_cuda.json"
  step "mlp-bench (again)" "$out/mlp.log" "${nn[@]}" mlp-bench --device cuda --impls cuda,cublas --batch-sizes 64,1024 --data "$data" --consistency-steps 0 --overhead-reps 0 --out-dir "$out/mlp_bench2"
}
# Whole models on the GPU: VGG-16 and ResNet-50 at batch 1 and 32, cuDNN's find, per-layer and
# whole-model times by CUDA events, NVML energy per inference; per entry of $PROFILE_LAUNCHES
# (default: graph graph+engines eager): each pass one CUDA graph (profile_MODEL_mbB/), the same
# with cuDNN's graph-API engines among find's candidates (profile_engines_MODEL_mbB/), or kernel
# by kernel (profile_eager_MODEL_mbB/).
stage_profile() {
  local entry launch tag model mb engines
  for entry in ${PROFILE_LAUNCHES:-graph graph+engines eager}; do
    launch=${entry%+engines}
    engines=() tag=
    [ "$launch" = eager ] && tag=eager_
    [ "$entry" != "$launch" ] && engines=(--engines) tag=engines_
    for model in vgg16 resnet50; do
      for mb in 1 32; do
        step "profile $entry $model mb$mb" "$out/profile.log" "${nn[@]}" profile --device cuda --launch "$launch" "${engines[@]}" --model "$model" --algorithm find --sizes 224 --batch-size "$mb" --warmup 5 --measure 20 --progress lines --output-dir "$out/profile_${tag}${model}_mb$mb"
        # The size's progress line (whole pass, the layers' sum against it, energy) into summary.txt.
        grep "^$model find.* size 224: " "$out/profile.log" | tail -1 | sed "s/^/profile $entry mb$mb: /" >> "$out/summary.txt"
      done
    done
  done
}

# Every distinct conv layer of VGG-16 and ResNet-50 (bench/conv_layers.txt) at batch 1 and 32
# (or $CONV_BATCHES), each nnperf process cut after $CONV_STEP_TIMEOUT seconds (default 30):
# PyTorch (cudnn.benchmark, TF32 off) over the list, then nnperf bench conv2d per layer (all of
# cuDNN's forward algorithms and the graph API's engines as rows; guess, and find with the
# engines among its candidates); per launch of $CONV_LAUNCHES (default: eager graph): eager calls
# into conv_mbB/, or each call captured once as a CUDA graph on both sides (--launch graph,
# --cuda-graph) into conv_graph_mbB/; then scripts/gpu_conv_table.py's table of the two per batch
# and launch (conv_table_[graph_]mbB.md).
stage_conv() {
  local mb model name count desc launch tag
  for launch in ${CONV_LAUNCHES:-eager graph}; do
    tag=$([ "$launch" = graph ] && echo graph_ || true)
    for mb in ${CONV_BATCHES:-1 32}; do
      step "conv_torch $launch mb$mb" "$out/conv.log" python3 "$here/conv_torch.py" --device cuda --layers "$here/conv_layers.txt" --batch "$mb" --variants nchw --warmup 3 --measure 10 $([ "$launch" = graph ] && echo --cuda-graph) --json "$out/conv_torch_${tag}mb$mb.json"
      mkdir -p "$out/conv_${tag}mb$mb"
      grep -v '^#' "$here/conv_layers.txt" | while read -r model name count desc; do
        [ -n "$desc" ] || continue
        desc="mb${mb}$(echo "${desc}" | sed -E 's/^mb[0-9]+//')"
        STEP_TIMEOUT=${CONV_STEP_TIMEOUT:-30} step "conv2d $launch mb$mb $model $name" "$out/conv.log" "${nn[@]}" bench conv2d --device cuda --launch "$launch" --engines --problem "$desc" --warmup 3 --measure 10 --json "$out/conv_${tag}mb$mb/${model}_${name}.json"
      done
      python3 "$here/gpu_conv_table.py" "$out" --batch "$mb" --launch "$launch" > "$out/conv_table_${tag}mb$mb.md" 2>> "$out/conv.log"
      tail -2 "$out/conv_table_${tag}mb$mb.md" >> "$out/summary.txt"
    done
  done
}
# BatchNorm's training passes on ResNet-50's shapes at batch 32 (the stem's 64 x 112 x 112, the
# stages' widest) by our kernels and cuDNN's (bench batchnorm: each row checked against the
# float64 reference, bandwidth at the two-pass minimum), then by PyTorch (batchnorm_torch.py:
# F.batch_norm in training and autograd's backward; one process per pass for all shapes, as
# importing torch costs seconds), into bn/; the table (batchnorm_table.py) into bn_table.md, its
# summary lines into summary.txt.
stage_bn() {
  local problem pass problems=(mb32c64h112 mb32c256h56 mb32c512h28 mb32c1024h14 mb32c2048h7 mb1c64h112)
  mkdir -p "$out/bn"
  for pass in forward backward; do
    for problem in "${problems[@]}"; do
      step "batchnorm $problem $pass" "$out/bn.log" "${nn[@]}" bench batchnorm --device cuda --problem "$problem" --pass "$pass" --warmup 5 --measure 20 --json "$out/bn/ours_${problem}_${pass}.json"
    done
    step "torch batchnorm $pass" "$out/bn.log" python3 "$here/batchnorm_torch.py" --device cuda "${problems[@]/#/--problem=}" --pass "$pass" --warmup 5 --measure 20 --json "$out/bn/torch_${pass}.json"
  done
  python3 "$here/batchnorm_table.py" "$out/bn" > "$out/bn_table.md" 2>> "$out/bn.log"
  grep '^bn ' "$out/bn_table.md" >> "$out/summary.txt"
}
# CNN training on the GPU (the fixed-iteration driver), alternating with PyTorch's on the same
# shapes (TF32 off, cudnn.benchmark as --algorithm find), then ours again with cuDNN's graph-API
# engines among find's candidates (--engines, label gpu-engines), then ours with cuDNN's
# BatchNorm (--batchnorm cudnn, PyTorch's for NCHW FP32; label gpu-cudnn-bn), then ours with each
# full step's forward, loss and backward one captured CUDA graph (--launch graph, label gpu-graph;
# with --engines too, gpu-graph-engines) after PyTorch's whole-network capture of its step
# (train_torch.py --cuda-graph): ResNet-18 at batch 32 on 32x32 and ResNet-50 at batch
# 32 on 224x224. Each step's wall time in the log is the plan (find) time on top of the steps'.
stage_train() {
  local cfg
  for cfg in "resnet18 32 32" "resnet50 32 224"; do
    set -- $cfg
    step "train --device cuda $1 b$2 s$3" "$out/train.log" "${nn[@]}" train --device cuda --launch eager --model "$1" --synthetic --iters 20 --warmup-iters 5 --batch-size "$2" --input-size "$3" --algorithm find --label gpu --log-dir "$out/train_logs"
    step "torch train $1 b$2 s$3" "$out/train.log" python3 "$here/train_torch.py" --device cuda --cudnn-benchmark --model "$1" --iters 20 --warmup-iters 5 --batch-size "$2" --input-size "$3" --num-classes 1000 --in-channels 3
    step "train --device cuda --engines $1 b$2 s$3" "$out/train.log" "${nn[@]}" train --device cuda --launch eager --engines --model "$1" --synthetic --iters 20 --warmup-iters 5 --batch-size "$2" --input-size "$3" --algorithm find --label gpu-engines --log-dir "$out/train_logs"
    step "train --device cuda --batchnorm cudnn $1 b$2 s$3" "$out/train.log" "${nn[@]}" train --device cuda --launch eager --batchnorm cudnn --model "$1" --synthetic --iters 20 --warmup-iters 5 --batch-size "$2" --input-size "$3" --algorithm find --label gpu-cudnn-bn --log-dir "$out/train_logs"
    step "torch train --cuda-graph $1 b$2 s$3" "$out/train.log" python3 "$here/train_torch.py" --device cuda --cudnn-benchmark --cuda-graph --model "$1" --iters 20 --warmup-iters 5 --batch-size "$2" --input-size "$3" --num-classes 1000 --in-channels 3
    step "train --device cuda --launch graph $1 b$2 s$3" "$out/train.log" "${nn[@]}" train --device cuda --launch graph --model "$1" --synthetic --iters 20 --warmup-iters 5 --batch-size "$2" --input-size "$3" --algorithm find --label gpu-graph --log-dir "$out/train_logs"
    step "train --device cuda --launch graph --engines $1 b$2 s$3" "$out/train.log" "${nn[@]}" train --device cuda --launch graph --engines --model "$1" --synthetic --iters 20 --warmup-iters 5 --batch-size "$2" --input-size "$3" --algorithm find --label gpu-graph-engines --log-dir "$out/train_logs"
  done
}
# CNN epoch training on the GPU on Fashion-MNIST (ResNet-18, batch 128, cuDNN's find, two
# epochs, the first untimed), then PyTorch's on the same recipe (cudnn.benchmark, TF32 off, every
# epoch's last batch of 96 trained on both sides), then ours again with --launch graph; then one
# ResNet-50 step at batch 32 profiled per layer by CUDA events (--profile-one-step), with our
# BatchNorm, with cuDNN's, and launched as one CUDA graph (--launch graph), and PyTorch's step profiled per module the same way (train_layers_torch.py); each of ours beside
# it per layer kind (train_layers_table.py: train_layers_<ours>.md, a line in summary.txt).
stage_cnn() {
  step "train resnet18 cuda epochs" "$out/cnn.log" "${nn[@]}" train --model resnet18 --device cuda --launch eager --data "$data" --epochs 2 --warmup-epochs 1 --batch-size 128 --workers 4 --algorithm find --progress lines --no-tensorboard --out-dir "$out/cnn_cuda"
  step "torch resnet18 cuda epochs" "$out/cnn.log" python3 "$here/train_torch.py" --device cuda --cudnn-benchmark --model resnet18 --data "$data" --epochs 2 --batch-size 128 --json "$out/cnn_torch.json"
  step "train resnet18 cuda epochs graph" "$out/cnn.log" "${nn[@]}" train --model resnet18 --device cuda --launch graph --data "$data" --epochs 2 --warmup-epochs 1 --batch-size 128 --workers 4 --algorithm find --progress lines --no-tensorboard --out-dir "$out/cnn_cuda_graph"
  ls -l "$out/cnn_cuda" >> "$out/cnn.log" 2>&1
  rm -f "$out/cnn_cuda"/*.ckpt  # 45 MB each: not carried back
  step "one step resnet50 cuda" "$out/cnn.log" "${nn[@]}" train --model resnet50 --device cuda --launch eager --synthetic --input-size 224 --batch-size 32 --limit-train 128 --limit-test 32 --profile-one-step --warmup-iters 5 --algorithm find --progress lines --no-tensorboard --out-dir "$out/one_step_resnet50"
  step "one step resnet50 cuda cudnn-bn" "$out/cnn.log" "${nn[@]}" train --model resnet50 --device cuda --launch eager --batchnorm cudnn --synthetic --input-size 224 --batch-size 32 --limit-train 128 --limit-test 32 --profile-one-step --warmup-iters 5 --algorithm find --progress lines --no-tensorboard --out-dir "$out/one_step_resnet50_cudnn_bn"
  step "one step resnet50 cuda graph" "$out/cnn.log" "${nn[@]}" train --model resnet50 --device cuda --launch graph --synthetic --input-size 224 --batch-size 32 --limit-train 128 --limit-test 32 --profile-one-step --warmup-iters 5 --algorithm find --progress lines --no-tensorboard --out-dir "$out/one_step_resnet50_graph"
  step "torch one step resnet50 layers" "$out/cnn.log" python3 "$here/train_layers_torch.py" --model resnet50 --batch-size 32 --input-size 224 --device cuda --warmup-iters 5 --csv "$out/torch_layers_resnet50.csv" --json "$out/torch_layers_resnet50.json"
  local d
  for d in one_step_resnet50 one_step_resnet50_cudnn_bn one_step_resnet50_graph; do
    [ -s "$out/$d/one_step_layers.csv" ] && [ -s "$out/torch_layers_resnet50.csv" ] || continue
    python3 "$here/train_layers_table.py" "$out/$d/one_step_layers.csv" "$out/torch_layers_resnet50.csv" --torch-json "$out/torch_layers_resnet50.json" > "$out/train_layers_$d.md" 2>> "$out/cnn.log" &&
      tail -1 "$out/train_layers_$d.md" | sed "s/^/$d: /" >> "$out/summary.txt"
  done
}
# CNN epochs with matched streams (ResNet-18 on Fashion-MNIST, batch 128, 2 epochs, seeds
# $PAIR_SEEDS, default "1 2"): PyTorch writes its initial weights for the seed in nnperf's format
# (--write-init), ours starts from them (--init-weights) once per BatchNorm of $PAIR_BATCHNORM
# (default "own cudnn": our float64-statistics kernels, then cuDNN's float ones, PyTorch's) and
# PyTorch replays our epoch orders and crop/flip draws (--streams nnperf), so the runs differ only
# in arithmetic; every run logs each step's loss and learning rate (--step-log), and
# step_log_compare.py says where ours and PyTorch's part and each side's worst spike
# (pair_<seed>_<bn>.md, its last line in summary.txt).
stage_cnnpair() {
  local s bn
  for s in ${PAIR_SEEDS:-1 2}; do
    rm -f "$out/pair_torch_$s.csv"
    step "torch write-init seed $s" "$out/cnnpair.log" python3 "$here/train_torch.py" --model resnet18 --data "$data" --seed "$s" --write-init "$out/pair_init_$s.ckpt"
    step "torch resnet18 cuda matched seed $s" "$out/cnnpair.log" python3 "$here/train_torch.py" --device cuda --cudnn-benchmark --model resnet18 --data "$data" --epochs 2 --batch-size 128 --seed "$s" --streams nnperf --step-log "$out/pair_torch_$s.csv" --json "$out/pair_torch_$s.json"
    for bn in ${PAIR_BATCHNORM:-own cudnn}; do
      rm -f "$out/pair_nnperf_${s}_$bn.csv"
      step "train resnet18 cuda matched seed $s batchnorm $bn" "$out/cnnpair.log" "${nn[@]}" train --model resnet18 --device cuda --batchnorm "$bn" --data "$data" --epochs 2 --batch-size 128 --workers 4 --algorithm find --seed "$s" --init-weights "$out/pair_init_$s.ckpt" --step-log "$out/pair_nnperf_${s}_$bn.csv" --progress lines --no-tensorboard --out-dir "$out/pair_nnperf_${s}_$bn"
      rm -f "$out/pair_nnperf_${s}_$bn"/*.ckpt  # 45 MB each: not carried back
      python3 "$here/step_log_compare.py" "$out/pair_nnperf_${s}_$bn.csv" "$out/pair_torch_$s.csv" --names "nnperf-$bn,torch" > "$out/pair_${s}_$bn.md" 2>> "$out/cnnpair.log" &&
        tail -1 "$out/pair_${s}_$bn.md" | sed "s/^/seed $s: /" >> "$out/summary.txt"
    done
    rm -f "$out/pair_init_$s.ckpt"
  done
}
# The device's ceilings (FMA, L2 and device-memory bandwidth, SGEMM) into a peaks.json env.
stage_peaks() { step peaks "$out/peaks.log" "${nn[@]}" peaks --device cuda --out "$out/peaks.json" --env gpu; }
# Real data on the GPU: the MLP on Fashion-MNIST (train), and the activation study, quick.
stage_real() {
  step "train mlp cuda" "$out/real.log" "${nn[@]}" train --device cuda --data "$data" --epochs 5 --warmup-epochs 1 --progress lines --no-tensorboard --out-dir "$out/train_mlp_cuda"
  step "activations cuda" "$out/real.log" "${nn[@]}" activations --device cuda --data "$data" --quick --out-dir "$out/activations_cuda"
}
# Nsight Compute over one ResNet-18 forward pass (batch 1) and one training step (batch 32,
# 32x32), their counter rooflines under the ceilings measured by the peaks stage (env gpu of
# peaks.json; measured here if absent).
stage_ncu() {
  command -v ncu > /dev/null || { echo "ncu: not on PATH" >> "$out/summary.txt"; return; }
  mkdir -p "$here/scripts" && cp "$here/ncu_profile.sh" "$here/scripts/"
  local peaks=()
  [ -s "$out/peaks.json" ] && peaks=("$out/peaks.json" gpu)
  step ncu "$out/ncu.log" env "LD_LIBRARY_PATH=$ld" bash "$here/scripts/ncu_profile.sh" "$work/bin/nnperf" "$out/ncu" resnet18 1 224 "${peaks[@]}"
  step "ncu train step" "$out/ncu.log" env "LD_LIBRARY_PATH=$ld" bash "$here/scripts/ncu_profile.sh" --train-step "$work/bin/nnperf" "$out/ncu_train" resnet18 32 32 "${peaks[@]}"
}
# compute-sanitizer's memcheck over the kernel suites (ours and cuDNN's BatchNorm) and a few GPU
# training steps.
stage_sanitize() {
  command -v compute-sanitizer > /dev/null || { echo "compute-sanitizer: not on PATH" >> "$out/summary.txt"; return; }
  step memcheck "$out/sanitize.log" env "LD_LIBRARY_PATH=$ld" compute-sanitizer --tool memcheck --error-exitcode 3 "$work/bin/test_gpu" --gtest_filter='CudaKernels*:CudaCnnKernels*:CudnnBatchNorm*:Rows/CudaGemm*:Rows/CudaActivation*:CudaCnnTrainer.EvaluationAndOptimizerState*'
}

stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(tests gemm mlp profile bn train cnn peaks real conv ncu sanitize)
for s in "${stages[@]}"; do
  case "$s" in
    tests|gemm|mlp|profile|bn|conv|train|cnn|cnnpair|peaks|real|ncu|sanitize) echo "--- stage $s at $((SECONDS - t_start))s" >> "$out/summary.txt"; "stage_$s" ;;
    *) echo "run.sh: unknown stage '$s' (tests gemm mlp profile bn conv train cnn cnnpair peaks real ncu sanitize)" >&2; exit 2 ;;
  esac
done
cat "$out/summary.txt"
