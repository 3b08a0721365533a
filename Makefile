# Thin front over CMake. `make` builds into build/, binaries in build/bin/.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build configure test demo deps install clean

all: build

configure:
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The README's test command (also what .ci/run calls). Every test runs with
# passive OpenMP waits (set on the tests in tests/CMakeLists.txt, so that a
# plain ctest gets them too).
test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

deps:
	@scripts/install_deps.sh

# The tools, plot_metrics and the helpers under PREFIX (no root needed for a
# folder of one's own: make install PREFIX=$$HOME/.local).
PREFIX ?= /usr/local
install: build
	@cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# deps + build + the end-to-end job on the generated default dataset.
demo: deps build
	@scripts/demo.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR)
