# edgelock: a thin wrapper over CMake. The two commands a newcomer needs:
#   make demo   - the main job, on local redis-servers it starts itself
#   make test   - everything CI runs
# Both install what is missing first (make deps). Build trees live in build/.

BUILD        ?= build
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
# The host's tests, with or without the sanitizers, mostly wait on the
# servers they start (failovers, ttls, a Cluster forming): twice as many at
# once as there are cores keeps the cores busy (with 2 cores, 4 at once take
# about half the time of 2; under the sanitizers, 132 s instead of 208).
TEST_JOBS    ?= $(shell echo $$(( $(JOBS) * 2 )))
BUILD_TYPE   ?= RelWithDebInfo
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 20
CMAKE_ARGS   ?=

HOST    := $(BUILD)/host
AARCH64 := $(BUILD)/aarch64
ARMHF   := $(BUILD)/armhf
FUZZ    := $(BUILD)/fuzz
ASAN    := $(BUILD)/asan
MUSL    := $(BUILD)/musl
VALKEY  := $(BUILD)/valkey
DEB_HOST := $(BUILD)/deb-host
PACKAGES := $(BUILD)/packages
CHAOS_SECONDS ?= 600
CHAOS_NODES ?= 5
CHAOS_TOPOLOGY ?= standalone
CHAOS_SMOKE_SECONDS ?= 80
CHAOS_SMOKE_DELAY_SECONDS ?= 10
CHAOS_SMOKE_REPLICATED_SECONDS ?= 25
CHAOS_SMOKE_VALKEY_SECONDS ?= 20

# Sources clang-format checks: everything we wrote, nothing generated.
FORMAT_FILES = $(shell git ls-files '*.cpp' '*.hpp' '*.c' '*.h' 2>/dev/null || \
                 find include src port tests examples -name '*.[ch]pp' -o -name '*.[ch]')

.PHONY: all build deps test host-build test-host fuzz-build test-aarch64 test-armhf check-freestanding \
        check-package check-musl check-format format fuzz fuzz-smoke test-sanitize chaos chaos-smoke \
        cross-aarch64 cross-armhf package deb-host check-deb \
        bench demo clean

all: build

build:
	cmake -S . -B $(HOST) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)
	cmake --build $(HOST) -j $(JOBS)

# Debian's packages, then Valkey 8 for the tests' Valkey runs (fetched into
# $(BUILD)/valkey) and Debian's promtool for the metrics file's check (taken
# out of the prometheus package into $(BUILD)/promtool, not installed); the
# machine's package sources are left as they are.
deps:
	@sh tests/tools/deps.sh
	@sh tests/tools/fetch_valkey.sh $(VALKEY)
	@sh tests/tools/fetch_promtool.sh $(BUILD)/promtool

# --- make test: every check, in the order cheapest failure first -------------
# Each step says when it starts, so a slow one shows in the log.
TEST_STEPS := check-format test-host test-sanitize chaos-smoke check-freestanding check-package \
              check-musl test-aarch64 test-armhf check-deb fuzz-smoke
test: deps
	@start=$$(date +%s); for step in $(TEST_STEPS); do \
	    echo "== make test: $$step at $$(( $$(date +%s) - start )) s"; \
	    $(MAKE) --no-print-directory $$step || exit 1; \
	done; echo "make test: all checks passed in $$(( $$(date +%s) - start )) s"

# The tests' own sources at -O0 and without debug information
# (EDGELOCK_TEST_CXX_FLAGS): what they test is built as a user builds it;
# Catch2's expanded assertions compile several times faster unoptimised, and
# a tenth faster again with nothing for a debugger (which CI never runs).
# The server tests run against Redis and, from $(VALKEY) (make deps), Valkey.
host-build:
	@echo "== host: build with -Werror"
	cmake -S . -B $(HOST) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DEDGELOCK_WERROR=ON \
	    -DEDGELOCK_TEST_CXX_FLAGS="-O0 -g0" -DEDGELOCK_TEST_VALKEY_BIN=$(abspath $(VALKEY))/bin \
	    -DEDGELOCK_TEST_PROMTOOL=$(abspath $(BUILD))/promtool/promtool $(CMAKE_ARGS)
	cmake --build $(HOST) -j $(JOBS)

test-host: host-build
	@echo "== host: unit tests"
	ctest --test-dir $(HOST) --output-on-failure -j $(TEST_JOBS)

# The unit and integration tests again, built with ASan + UBSan, and the
# agent's tests tagged [asan] against an agent built so; any finding aborts
# the test that hit it. The library and agent at -O1, as ASan's authors
# advise: the same checks, and half the build time of -O2. The tests' own
# sources at -O0 (EDGELOCK_TEST_CXX_FLAGS): Catch2's expanded assertions are
# where an instrumented build spends its time, five times less at -O0. Debug
# information as line tables only (-g1): what a sanitizer's report names
# (function, file and line), for less compile time than -g.
test-sanitize:
	@echo "== host: unit, integration and [asan] agent tests under ASan + UBSan"
	cmake -S . -B $(ASAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDGELOCK_SANITIZE=ON \
	    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DEDGELOCK_TEST_CXX_FLAGS=-O0 \
	    -DEDGELOCK_WERROR=ON -DEDGELOCK_CLI=ON -DEDGELOCK_EXAMPLES=OFF -DEDGELOCK_BENCH=OFF \
	    -DEDGELOCK_INSTALL=OFF $(CMAKE_ARGS)
	cmake --build $(ASAN) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:abort_on_error=1 \
	    ctest --test-dir $(ASAN) --output-on-failure -j $(TEST_JOBS)

# The chaos safety checker: workers contend for one key while nodes and the
# network fail; the run fails on any "must be 0" in its report.
# CHAOS_TOPOLOGY: standalone (CHAOS_NODES masters), sentinel or cluster.
chaos: host-build
	$(HOST)/tests/edgelock_chaos --self-test
	$(HOST)/tests/edgelock_chaos --topology $(CHAOS_TOPOLOGY) \
	    $(if $(filter standalone,$(CHAOS_TOPOLOGY)),--nodes $(CHAOS_NODES)) --seconds $(CHAOS_SECONDS)

# The short run in make test: standalone, a third on one node and the rest on
# five; link delays on a lock and on a semaphore of 2, each on one node and on
# three (a run takes 2 s more than its seconds); then sentinel and cluster
# (the latter needs redis-cli).
chaos-smoke: host-build
	@echo "== chaos: $(CHAOS_SMOKE_SECONDS)s standalone (1 node then 5 nodes), 4 x $(CHAOS_SMOKE_DELAY_SECONDS)s link delays, then $(CHAOS_SMOKE_REPLICATED_SECONDS)s sentinel and $(CHAOS_SMOKE_REPLICATED_SECONDS)s cluster"
	$(HOST)/tests/edgelock_chaos --self-test
	$(HOST)/tests/edgelock_chaos --nodes 1 --seconds $$(( $(CHAOS_SMOKE_SECONDS) / 3 ))
	$(HOST)/tests/edgelock_chaos --nodes 5 --seconds $$(( $(CHAOS_SMOKE_SECONDS) - $(CHAOS_SMOKE_SECONDS) / 3 ))
	$(HOST)/tests/edgelock_chaos --link-delays --nodes 1 --seconds $(CHAOS_SMOKE_DELAY_SECONDS)
	$(HOST)/tests/edgelock_chaos --link-delays --nodes 1 --permits 2 --seconds $(CHAOS_SMOKE_DELAY_SECONDS)
	$(HOST)/tests/edgelock_chaos --link-delays --nodes 3 --seconds $(CHAOS_SMOKE_DELAY_SECONDS)
	$(HOST)/tests/edgelock_chaos --link-delays --nodes 3 --permits 2 --seconds $(CHAOS_SMOKE_DELAY_SECONDS)
	$(HOST)/tests/edgelock_chaos --topology sentinel --seconds $(CHAOS_SMOKE_REPLICATED_SECONDS)
	@if command -v redis-cli >/dev/null 2>&1; then \
	    echo "$(HOST)/tests/edgelock_chaos --topology cluster --seconds $(CHAOS_SMOKE_REPLICATED_SECONDS)"; \
	    $(HOST)/tests/edgelock_chaos --topology cluster --seconds $(CHAOS_SMOKE_REPLICATED_SECONDS); \
	else \
	    echo "== chaos: cluster run SKIPPED: redis-cli is missing (make deps installs it)"; \
	fi
	@echo "== chaos: $(CHAOS_SMOKE_VALKEY_SECONDS)s standalone on 3 Valkey nodes"
	PATH="$(abspath $(VALKEY))/bin:$$PATH" $(HOST)/tests/edgelock_chaos --nodes 3 \
	    --seconds $(CHAOS_SMOKE_VALKEY_SECONDS)

test-aarch64: cross-aarch64
	@echo "== aarch64: unit tests under qemu-aarch64"
	ctest --test-dir $(AARCH64) --output-on-failure -j $(JOBS)

test-armhf: cross-armhf
	@echo "== armhf (32-bit): unit tests under qemu-arm"
	ctest --test-dir $(ARMHF) --output-on-failure -j $(JOBS)

# The tests' own sources at -O0 here too, as in host-build: the library and
# port under test are built as a user cross-compiles them. The libraries
# install into lib/<triplet> (EDGELOCK_MULTIARCH): these trees also make the
# arm packages (make package). No debug information here (CROSS_FLAGS):
# nothing reads it (qemu's runs print no backtraces, the packages are
# stripped), and it is a fifth to a third of these trees' compile time.
CROSS_FLAGS := -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
               -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG"
cross-aarch64:
	@echo "== aarch64: static cross build"
	cmake -S . -B $(AARCH64) -DCMAKE_TOOLCHAIN_FILE=toolchains/aarch64-linux-gnu.cmake \
	    -DEDGELOCK_STATIC=ON -DEDGELOCK_WERROR=ON -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	    -DEDGELOCK_TEST_CXX_FLAGS=-O0 -DEDGELOCK_MULTIARCH=ON $(CROSS_FLAGS) $(CMAKE_ARGS)
	cmake --build $(AARCH64) -j $(JOBS)

cross-armhf:
	@echo "== armhf: static cross build"
	cmake -S . -B $(ARMHF) -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-linux-gnueabihf.cmake \
	    -DEDGELOCK_STATIC=ON -DEDGELOCK_WERROR=ON -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	    -DEDGELOCK_TEST_CXX_FLAGS=-O0 -DEDGELOCK_MULTIARCH=ON $(CROSS_FLAGS) $(CMAKE_ARGS)
	cmake --build $(ARMHF) -j $(JOBS)

# --- Debian packages (cmake/packaging.cmake) ---------------------------------------
# edgelock and libedgelock-dev for amd64 (the build machine's architecture),
# arm64 and armhf, in $(PACKAGES). The arm ones come from the static cross
# trees make test builds anyway; the build machine's from a static Release
# tree of the libraries and the agent only.
package: deb-host cross-aarch64 cross-armhf
	@rm -rf $(PACKAGES) && mkdir -p $(PACKAGES)
	@for tree in $(DEB_HOST) $(AARCH64) $(ARMHF); do \
	    echo "== package: cpack in $$tree"; \
	    rm -f $$tree/*.deb && (cd $$tree && cpack -G DEB >cpack.log 2>&1) || \
	        { cat $$tree/cpack.log; exit 1; }; \
	    cp $$tree/*.deb $(PACKAGES)/ || exit 1; \
	done
	@ls -l $(PACKAGES)

deb-host:
	@echo "== package: static Release build of the agent and libraries"
	cmake -S . -B $(DEB_HOST) -DCMAKE_BUILD_TYPE=Release -DEDGELOCK_STATIC=ON \
	    -DEDGELOCK_MULTIARCH=ON -DEDGELOCK_WERROR=ON -DEDGELOCK_TESTS=OFF -DEDGELOCK_BENCH=OFF \
	    -DEDGELOCK_EXAMPLES=OFF -DEDGELOCK_CLI=ON $(CMAKE_ARGS)
	cmake --build $(DEB_HOST) -j $(JOBS)

# After test-aarch64 and test-armhf in make test: their trees are built.
check-deb: package
	@echo "== packages: lintian, contents, the agents run (arm under qemu), -dev consumers"
	@sh tests/tools/check_deb.sh $(PACKAGES) $(BUILD)/check-deb

check-freestanding:
	@echo "== core: freestanding compile (arm-none-eabi)"
	@sh tests/tools/check_freestanding.sh

check-package: host-build
	@echo "== packaging: install, then find_package / add_subdirectory / pkg-config consumers"
	@sh tests/tools/check_package.sh $(HOST) $(BUILD)/package

# A static C program built with musl-gcc (Debian's musl-tools) links the
# library built for musl and runs the C API's tests against redis-server.
check-musl:
	@echo "== musl: the library for musl, a static C program on it"
	@sh tests/tools/check_musl.sh $(MUSL)

check-format:
	@echo "== clang-format"
	@clang-format --dry-run -Werror $(FORMAT_FILES)

format:
	clang-format -i $(FORMAT_FILES)

# --- fuzzing (clang, libFuzzer + ASan + UBSan) --------------------------------
$(FUZZ)/.configured:
	cmake -S . -B $(FUZZ) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
	    -DEDGELOCK_FUZZ=ON -DEDGELOCK_TESTS=OFF -DEDGELOCK_BENCH=OFF \
	    -DEDGELOCK_EXAMPLES=OFF -DEDGELOCK_INSTALL=OFF -DEDGELOCK_WERROR=ON $(CMAKE_ARGS)
	@touch $@

fuzz-build: $(FUZZ)/.configured
	cmake --build $(FUZZ) -j $(JOBS)

# Long run; new interesting inputs are kept in tests/fuzz/corpus/.
fuzz: fuzz-build
	bash tests/tools/run_fuzz.sh $(FUZZ) $(FUZZ_SECONDS) keep

# Short run for make test; leaves the corpus untouched.
fuzz-smoke: fuzz-build
	@echo "== fuzz: $(FUZZ_SMOKE_SECONDS)s per target"
	bash tests/tools/run_fuzz.sh $(FUZZ) $(FUZZ_SMOKE_SECONDS)

# --- benchmarks ------------------------------------------------------------------
# Every benchmark, side by side with its peer (hiredis, redis-benchmark,
# redis-cli), then BENCHMARKS.md rewritten with the figures. hiredis and
# valgrind are for the benchmarks only: installed here, not by make test;
# redis-tools (redis-cli) usually comes with redis-server, named here since
# the slow-link section needs it; python3-redis is the lossy-link section's
# peer (redis-py), LOSSY_RUNS its runs per profile.
LOSSY_RUNS ?= 30
bench:
	@sh tests/tools/deps.sh libhiredis-dev valgrind redis-tools python3-redis
	cmake -S . -B $(BUILD)/bench -DCMAKE_BUILD_TYPE=Release -DEDGELOCK_TESTS=OFF \
	    -DEDGELOCK_EXAMPLES=OFF -DEDGELOCK_CLI=ON -DEDGELOCK_INSTALL=OFF \
	    -DEDGELOCK_BENCH_REQUIRE_PEERS=ON $(CMAKE_ARGS)
	cmake --build $(BUILD)/bench -j $(JOBS)
	JOBS=$(JOBS) LOSSY_RUNS=$(LOSSY_RUNS) sh tests/bench/run.sh $(BUILD)

# --- the demo: agents taking turns on local redis-servers it starts itself ------
demo: deps
	cmake -S . -B $(HOST) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)
	cmake --build $(HOST) -j $(JOBS) --target edgelock_cli
	@sh examples/demo.sh $(HOST)/edgelock

clean:
	rm -rf $(BUILD)
