# The two commands of the README. Both install what is missing, configure and build.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DNNPERF_WERROR=ON

.PHONY: deps build run test bench bench-conv asan fuzz format clean

deps:
	bash scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# The main job on the embedded default data (Fashion-MNIST from Debian's package).
run: build
	./$(BUILD)/nnperf activations --quick

# The whole test suite.
test: build
	bash scripts/test.sh $(BUILD)

# The measured targets (GEMM vs OpenBLAS, mlp-bench, training vs PyTorch and NumPy).
bench: build
	bash scripts/bench.sh $(BUILD)

# The CNN targets: every VGG16/ResNet-50 conv layer vs PyTorch and oneDNN, whole-model latency.
bench-conv: build
	bash scripts/bench_conv.sh $(BUILD)

asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DNNPERF_WERROR=ON -DNNPERF_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo"

# libFuzzer + ASan + UBSan on the parsers of untrusted input, FUZZ_SECONDS per target (clang).
FUZZ_SECONDS ?= 60
fuzz: deps
	bash scripts/fuzz.sh $(FUZZ_SECONDS)

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD) build-asan
