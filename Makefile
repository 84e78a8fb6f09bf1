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

# Generates the demo data set with the project's own simulator and trains the demo model
# in-process, printing its fit on held-out data.
demo: build
	@mkdir -p $(BUILD_DIR)/demo
	@$(BUILD_DIR)/bin/sparrow datagen cascaded-tanks --samples 2048 --seed 1 \
	  -o $(BUILD_DIR)/demo/cascaded_tanks.csv
	@$(BUILD_DIR)/bin/sparrow run --local examples/demo.json

bench: build
	@./bench/run_all.sh $(BUILD_DIR)

format:
	@find core server client tests bench -name '*.h' -o -name '*.cc' | xargs clang-format -i

clean:
	@rm -rf $(BUILD_DIR)
