# Thin wrapper over CMake/Ninja: installs what is missing, configures, builds,
# runs the demo and the test suite. Everything real lives in CMake and lit.

BUILD ?= build
LLVM_DIR ?= /usr/lib/llvm-22
CMAKE_FLAGS ?=
APT_PACKAGES = libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools \
               clang-22 libomp-22-dev ninja-build cmake

.PHONY: gpu-artifacts all deps pydeps torch-venv configure build check check-torch check-sanitize fuzz demo bench bench-dynamic bench-peers bench-decode bench-varlen bench-torch docs clean

all: build

# Installs the Debian packages the build needs, only when one is missing.
deps:
	@bash scripts/install-deps.sh $(APT_PACKAGES)

$(BUILD)/build.ninja: | deps
	cmake -G Ninja -S . -B $(BUILD) \
	  -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_C_COMPILER=$(LLVM_DIR)/bin/clang \
	  -DCMAKE_CXX_COMPILER=$(LLVM_DIR)/bin/clang++ \
	  -DMLIR_DIR=$(LLVM_DIR)/lib/cmake/mlir \
	  -DLLVM_EXTERNAL_LIT=$(LLVM_DIR)/bin/lit $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD)

PIP_PACKAGES = numpy ml_dtypes pytest matplotlib

# Installs the Python package's dependencies (PyPI) when one is missing.
pydeps:
	@python3 -c "import numpy, ml_dtypes, pytest, matplotlib" 2>/dev/null || \
	  python3 -m pip install -q $(PIP_PACKAGES)

# torch (about 5 GB with its CUDA libraries) goes into a virtual
# environment of its own, shared with the benchmarks against PyTorch.
PEERS_VENV ?= $(BUILD)/peers-venv
TORCH_PACKAGES = numpy ml_dtypes pytest torch transformers

# The whole test suite: the lit regression tests, then the Python package's
# pytest suite against the tools of this build; with ATTN_WITH_TORCH=1 also
# the torch op, torch.compile and ring attention tests (check-torch), which
# are skipped otherwise.
check: build pydeps
	ninja -C $(BUILD) check-attn-mlir
	cd python && ATTN_MLIR_BIN=$(abspath $(BUILD))/bin python3 -m pytest -q --durations=15 tests
	@if [ "$(ATTN_WITH_TORCH)" = 1 ]; then $(MAKE) --no-print-directory check-torch; \
	else echo "make check: the torch tests were skipped (ATTN_WITH_TORCH=1 make check \
	installs torch into $(PEERS_VENV) and runs them)"; fi

# Installs torch and the test dependencies into $(PEERS_VENV) when missing.
torch-venv:
	@test -x $(PEERS_VENV)/bin/python || python3 -m venv $(PEERS_VENV)
	@$(PEERS_VENV)/bin/python -c "import numpy, ml_dtypes, pytest, torch, transformers" 2>/dev/null || \
	  $(PEERS_VENV)/bin/pip install -q $(TORCH_PACKAGES)

# The tests that need torch (the torch op, ring attention, the
# transformers backend) in $(PEERS_VENV); without torch they skip.
TORCH_TESTS = tests/test_torch*.py tests/test_distributed*.py tests/test_transformers.py
check-torch: build torch-venv
	cd python && ATTN_MLIR_BIN=$(abspath $(BUILD))/bin \
	  $(abspath $(PEERS_VENV))/bin/python -m pytest -q --durations=15 $(TORCH_TESTS)

# The lit suite built with AddressSanitizer + UBSan (build-asan).
check-sanitize: deps
	@test -f build-asan/build.ninja || cmake -G Ninja -S . -B build-asan \
	  -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_C_COMPILER=$(LLVM_DIR)/bin/clang \
	  -DCMAKE_CXX_COMPILER=$(LLVM_DIR)/bin/clang++ \
	  -DMLIR_DIR=$(LLVM_DIR)/lib/cmake/mlir \
	  -DLLVM_EXTERNAL_LIT=$(LLVM_DIR)/bin/lit -DATTN_ENABLE_SANITIZERS=ON
	# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons memory from
	# inline code in our (instrumented) objects that the uninstrumented
	# libMLIR.so then reads, a false use-after-poison.
	ASAN_OPTIONS=detect_leaks=1:allow_user_poisoning=0 \
	  UBSAN_OPTIONS=print_stacktrace=1 ninja -C build-asan check-attn-mlir

# Fuzzes the compiler and the runtime readers, each target for up to
# FUZZ_SECONDS (default 720; it stops earlier when coverage plateaus).
FUZZ_SECONDS ?= 720
fuzz: deps
	bash scripts/fuzz.sh $(FUZZ_SECONDS)

# Compiles the example graphs and shows the IR after each stage.
demo: build pydeps
	@bash scripts/demo.sh $(BUILD)

# The CPU benchmark (not a test): ratios measured in one run; needs numpy.
bench: build
	@python3 -c "import numpy" 2>/dev/null || python3 -m pip install -q numpy
	python3 benchmarks/bench_cpu.py --build $(BUILD)

# Dynamic shapes against static ones, and the decode loop's Python cost
# (not a test); needs numpy and ml_dtypes.
bench-dynamic: build pydeps
	python3 benchmarks/bench_dynamic.py --build $(BUILD) $(BENCH_FLAGS)

# attn_mlir against PyTorch's and JAX's CPU attention and numpy (not a
# test): torch and jax are large, so they go into a virtual environment of
# their own ($(PEERS_VENV)), installed on first use; BENCH_FLAGS=--quick
# for a shorter grid.
bench-peers: build torch-venv
	@$(PEERS_VENV)/bin/python -c "import jax, matplotlib" 2>/dev/null || \
	  $(PEERS_VENV)/bin/pip install -q jax matplotlib
	$(PEERS_VENV)/bin/python benchmarks/bench_peers.py --build $(BUILD) \
	  --plot docs/bench-peers.png $(BENCH_FLAGS)

# A decode step over a long KV cache against the host's read bandwidth and
# PyTorch (not a test); torch goes into $(PEERS_VENV) as for bench-peers.
bench-decode: build torch-venv
	$(PEERS_VENV)/bin/python benchmarks/bench_decode.py --build $(BUILD) $(BENCH_FLAGS)

# A varlen prefill (one call over a packed batch) against one call per
# sequence and PyTorch (not a test); torch goes into $(PEERS_VENV).
bench-varlen: build torch-venv
	$(PEERS_VENV)/bin/python benchmarks/bench_varlen.py --build $(BUILD) $(BENCH_FLAGS)

# The torch op's overhead and ring attention's speed-up (not a test);
# torch goes into $(PEERS_VENV).
bench-torch: build torch-venv
	$(PEERS_VENV)/bin/python benchmarks/bench_torch.py --build $(BUILD) $(BENCH_FLAGS)

# Regenerates the op and pass references under docs/.
docs: build
	ninja -C $(BUILD) mlir-doc
	cp $(BUILD)/docs/Dialects/AttnOps.md $(BUILD)/docs/Dialects/AttnDialect.md docs/
	cp $(BUILD)/docs/AttnPasses.md $(BUILD)/docs/AttnConversionPasses.md docs/

# Artifacts for tools/gpu-check.sh (the device check), built here: the CUDA
# correctness matrix and the FlashAttention benchmark grid as sm_90 cubins.
gpu-artifacts: build
	ATTN_MLIR_BIN=$(abspath $(BUILD))/bin scripts/build-gpu-artifacts.sh gpu-artifacts sm_90

clean:
	rm -rf $(BUILD)
