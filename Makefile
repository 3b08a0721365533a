# Thin front over CMake. `make` builds into build/, binaries in build/bin/.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build configure test demo deps clean

all: build

configure:
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The README's test command (also what .ci/run calls). Passive OpenMP waits:
# ctest -j runs several multi-threaded tests at once, and threads spinning at
# barriers for cores that another test holds cost more than the work itself.
test: build
	@cd $(BUILD_DIR) && OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-passive} ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

deps:
	@scripts/install_deps.sh

# deps + build + the end-to-end job on the generated default dataset.
demo: deps build
	@scripts/demo.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR)
