# Sparrow developer entry points. `make test` is what CI runs; `make demo` is the quick start.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build test demo bench format clean

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

# The quick start: starts sparrowd with its embedded store in a temporary directory, generates
# the demo data with the project's own simulator, submits and watches the demo job through the
# CLI, fetches the model, predicts held-out data, prints the fit and stops the server.
demo: build
	@./scripts/demo.sh $(BUILD_DIR)/bin

bench: build
	@./bench/run_all.sh $(BUILD_DIR)

format:
	@find core server client tests bench -name '*.h' -o -name '*.cc' | xargs clang-format -i

clean:
	@rm -rf $(BUILD_DIR)
