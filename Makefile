# The two commands of the README. Both install what is missing, configure and build.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DNNPERF_WERROR=ON

.PHONY: deps configure build run test bench bench-conv bench-batchnorm bench-guess asan tsan fuzz format clean

# Debian packages, Fashion-MNIST and (unless DEPS_FLAGS=--no-test-deps) the TensorBoard venv the
# tests read event files with.
deps:
	bash scripts/install-deps.sh $(DEPS_FLAGS)

configure: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

# Everything: the library, the program, the tests and the benchmarks.
build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The main job (nnperf lab) on the embedded default data (Fashion-MNIST from Debian's package). Builds only
# the program it runs, not the tests and benchmarks, and skips the test-only TensorBoard venv.
run: DEPS_FLAGS = --no-test-deps
run: configure
	cmake --build $(BUILD) -j $(JOBS) --target nnperf_cli
	./$(BUILD)/nnperf lab

# The whole test suite.
test: build
	bash scripts/test.sh $(BUILD)

# The measured targets (GEMM vs OpenBLAS, mlp-bench, MLP training vs PyTorch and NumPy, then CNN
# training vs PyTorch: iteration times, data path; ACCURACY=1 adds the Fashion-MNIST accuracy runs).
bench: build
	bash scripts/bench.sh $(BUILD)
	bash scripts/bench_train_cnn.sh $(BUILD)

# The CNN targets: every VGG16/ResNet-50 conv layer vs PyTorch and oneDNN, whole-model latency.
bench-conv: build
	bash scripts/bench_conv.sh $(BUILD)

# BatchNorm's training pass on ResNet-50's shapes vs PyTorch's, forward and backward.
bench-batchnorm: build
	bash scripts/bench_batchnorm.sh $(BUILD)

# How close guess's convolution rows come to the fastest ones over a training step's problems
# (MODEL, BATCH, SIZE: default ResNet-18, 32, 32x32).
bench-guess: build
	bash scripts/bench_guess.sh $(BUILD)

asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DNNPERF_WERROR=ON -DNNPERF_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo"

# ThreadSanitizer (clang, libomp's Archer tool) over the threaded unit suites and a two-thread
# training run.
tsan: deps
	bash scripts/tsan.sh

# libFuzzer + ASan + UBSan on the parsers of untrusted input, FUZZ_SECONDS per target (clang).
FUZZ_SECONDS ?= 60
fuzz: deps
	bash scripts/fuzz.sh $(FUZZ_SECONDS)

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD) build-asan build-tsan
