#!/bin/bash
# run_fuzz.sh BUILD_DIR SECONDS [keep]
# Runs every libFuzzer target built in BUILD_DIR for SECONDS each, seeded with
# tests/fuzz/corpus/<name>/. With "keep", new interesting inputs are written
# into that corpus (for `make fuzz`); without, into a scratch directory, so a
# test run leaves the tree as it was. Targets run FUZZ_JOBS at a time (the
# cores; each fuzzer is one process on one core), so each still gets SECONDS
# of a core of its own.
set -euo pipefail
build=$(cd "$1" && pwd)
seconds=$2
keep=${3:-}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}

# fuzz_one BIN: runs one target; its report (or its failure) on stdout.
fuzz_one() {
    local bin=$1 name corpus scratch log
    name=$(basename "$bin")
    corpus=$PWD/tests/fuzz/corpus/${name#fuzz_}
    mkdir -p "$corpus"
    scratch=$(mktemp -d)
    local dirs=("$scratch" "$corpus")
    [ "$keep" = keep ] && dirs=("$corpus")
    log="$scratch.log"
    echo "== $name: ${seconds}s, corpus $corpus"
    if ! (cd "$scratch" && "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "${dirs[@]}") >"$log" 2>&1; then
        tail -n 60 "$log"
        echo "fuzz: $name FAILED (log $log; any crashing input is in $scratch)"
        return 1
    fi
    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)|cov:' "$log" | tail -n 3
    rm -rf "$scratch" "$log"
}

bins=()
for bin in "$build"/tests/fuzz/fuzz_*; do
    [ -x "$bin" ] && bins+=("$bin")
done
[ "${#bins[@]}" -gt 0 ] || { echo "fuzz: no fuzz targets in $build" >&2; exit 1; }

# In batches of $jobs; each target's report printed whole, in order.
failed=0
for ((i = 0; i < ${#bins[@]}; i += jobs)); do
    pids=()
    outs=()
    for bin in "${bins[@]:i:jobs}"; do
        out=$(mktemp)
        fuzz_one "$bin" >"$out" 2>&1 &
        pids+=("$!")
        outs+=("$out")
    done
    for k in "${!pids[@]}"; do
        wait "${pids[$k]}" || failed=1
        cat "${outs[$k]}"
        rm -f "${outs[$k]}"
    done
done
[ "$failed" -eq 0 ] || { echo "fuzz: a target failed (above)" >&2; exit 1; }
