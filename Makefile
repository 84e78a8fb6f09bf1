# Sparrow developer entry points. `make test` is what CI runs; `make demo` is the quick start.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

# Sanitizer stages (make sanitize; part of make test): separate build dirs, each with its own
# bin/sparrowd for the tests that spawn it, and only the fast tests (SPARROW_TEST_FILTER).
ASAN_DIR ?= build-asan
TSAN_DIR ?= build-tsan
# Test binaries each stage builds (names: tests/ path, '/' -> '_'), and single tests it skips
# because they only train for long (they run in the normal build): the examples (real data) and
# the client's 4000-epoch restart test (106 s under ASan), and the job manager's shutdown test
# during a multi-second NAILS epoch (it needs the epoch to outlast the stop grace, and waits
# for a whole one first).
ASAN_TESTS ?= ^(core_|server_(service|store|jobs|http)_|translate_(config|data|images|json|model|onnx|predict)_|client_|fuzz_)
ASAN_SKIP ?= WatchDeliversEveryEventOnceAcrossARestart|StopsWithinTheGraceDuringALongEpoch
# TSan runs the store, event hub and job manager tests (the last drives the job manager without
# gRPC). Debian's gRPC and Abseil are not instrumented, so in the service tests every hand-off
# between gRPC's threads is reported as a race; suppressing those took ever broader rules
# (std::function, absl::StrCat, gRPC's callback tags) that would hide real races in our
# reactors too. For the same reason the job manager tests that go through an in-process gRPC
# server (memory limits, crashes) run in the other two builds only; its store-failure and
# concurrency tests drive the job manager directly and run here.
TSAN_TESTS ?= ^(server_(store|jobs)_|core_train_models_layered_|core_util_thread_pool_|core_optim_gauss_newton_)
TSAN_SKIP ?= StopsWithinTheGraceDuringALongEpoch|MemoryLimitTest|TotalMemoryTest|RuntimeMemoryTest|CrashTest
# Clang compiles the instrumented builds: on the 2-core machine it took 0.61-0.74 of GCC's time
# per file under ASan (8 files compiled side by side, 2026-11-30), and the sanitizer builds are
# most of CI's time. The normal build stays GCC's (the numbers in docs/ and bench/ are its).
SAN_CXX ?= clang++
# A sanitizer directory configured with another compiler is started afresh: CMake would delete
# its cache itself, and with it the settings below, for that one run. Both compilers are
# compared as the files they resolve to: the cache holds `clang++` or `/usr/bin/clang++`
# depending on how the directory was first configured.
san_fresh = if [ -f $(1)/CMakeCache.txt ]; then \
  cached=$$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' $(1)/CMakeCache.txt); \
  if [ "$$(readlink -f "$$(command -v "$$cached")")" != \
       "$$(readlink -f "$$(command -v $(SAN_CXX))")" ]; then \
  echo "$(1): configured with $$cached; building it afresh with $(SAN_CXX)"; \
  rm -rf $(1); fi; fi
SAN_CMAKE = cmake -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARROW_BUILD_TESTS=ON \
  -DSPARROW_BUILD_BENCH=OFF -DCMAKE_CXX_COMPILER=$(SAN_CXX) $(CMAKE_FLAGS)
# UBSan stops at the first error; ASan's and TSan's reports fail the test.
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS ?= detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0
export TSAN_OPTIONS ?= halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/scripts/tsan.supp

# Fuzzing (make fuzz; not part of make test): libFuzzer targets built with clang in FUZZ_DIR,
# each run for FUZZ_SECONDS from the committed seed corpus (fuzz/README.md).
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= csv_fuzz spec_fuzz model_fuzz checkpoint_fuzz rpc_fuzz image_fuzz

.PHONY: all deps configure build test sanitize sanitize-asan sanitize-tsan fuzz demo bench \
  image format clean

all: build

deps:
	@./scripts/install-deps

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DSPARROW_BUILD_TESTS=ON $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600
	@$(MAKE) --no-print-directory sanitize

# Both sanitizer stages (clang, -O1) build only the target sparrow_test_binaries: the test
# binaries (with tests/testing/precompiled.h precompiled once) and the sparrowd they start.
# Measured 2026-11-30 from scratch on the 2-core machine, in `make test` of commit 32e8c22
# (clang 14; nothing else running):
#   sanitize-asan  ASan + UBSan: core, server spec/store/service/jobs, client and fuzz
#                  regression tests (1301): build 1094 s, tests 240 s
#   sanitize-tsan  TSan: store, jobs, layered-model, thread-pool and Gauss-Newton tests (167):
#                  build 469 s, tests 87 s
# GCC's were 1444 s / 450 s and 510 s / 104 s on 2026-11-29, but this VM's speed varies about
# twofold between hours: compiled side by side, pinned one core each, clang took 0.61 to 0.74
# of GCC's time on each of 8 files (core, server and test files) under ASan.
# The normal stage (build + 1374 tests) comes first.
sanitize: sanitize-asan sanitize-tsan

sanitize-asan: deps
	@$(call san_fresh,$(ASAN_DIR))
	@$(SAN_CMAKE) -S . -B $(ASAN_DIR) -DSPARROW_SANITIZE=address,undefined \
	  -DSPARROW_TEST_FILTER='$(ASAN_TESTS)' >/dev/null
	@./scripts/timed "sanitize-asan build" cmake --build $(ASAN_DIR) -j $(JOBS) \
	  --target sparrow_test_binaries
	@cd $(ASAN_DIR) && ../scripts/timed "sanitize-asan tests" \
	  ctest --output-on-failure -j $(JOBS) --timeout 600 -E '$(ASAN_SKIP)'

sanitize-tsan: deps
	@$(call san_fresh,$(TSAN_DIR))
	@$(SAN_CMAKE) -S . -B $(TSAN_DIR) -DSPARROW_SANITIZE=thread \
	  -DSPARROW_TEST_FILTER='$(TSAN_TESTS)' >/dev/null
	@./scripts/timed "sanitize-tsan build" cmake --build $(TSAN_DIR) -j $(JOBS) \
	  --target sparrow_test_binaries
	@cd $(TSAN_DIR) && ../scripts/timed "sanitize-tsan tests" \
	  ctest --output-on-failure -j $(JOBS) --timeout 600 -E '$(TSAN_SKIP)'

fuzz:
	@./scripts/install-deps
	@cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_CXX_COMPILER=clang++ \
	  -DSPARROW_BUILD_FUZZ=ON -DSPARROW_BUILD_TESTS=OFF -DSPARROW_BUILD_BENCH=OFF >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzz_targets
	@./fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The quick start: starts sparrowd with its embedded store in a temporary directory, generates
# the demo data with the project's own simulator, submits and watches the demo job through the
# CLI, fetches the model, predicts held-out data, prints the fit and stops the server.
demo: build
	@./scripts/demo.sh $(BUILD_DIR)/bin

bench: build
	@./bench/run_all.sh $(BUILD_DIR)

# The container image (deploy/Dockerfile) with podman, smoke-tested; not part of make test.
# IMAGE_TAG names it; scripts/build-image says how it works without a Docker daemon.
IMAGE_TAG ?= localhost/sparrow:dev
image:
	@./scripts/build-image $(IMAGE_TAG)

format:
	@find core server client tests bench fuzz -name '*.h' -o -name '*.cc' | xargs clang-format -i

clean:
	@rm -rf $(BUILD_DIR) $(ASAN_DIR) $(TSAN_DIR) $(FUZZ_DIR)
