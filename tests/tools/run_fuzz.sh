#!/bin/bash
# run_fuzz.sh BUILD_DIR SECONDS [keep]
# Runs every libFuzzer target built in BUILD_DIR for SECONDS each, seeded with
# tests/fuzz/corpus/<name>/. With "keep", new interesting inputs are written
# into that corpus (for `make fuzz`); without, into a scratch directory, so a
# test run leaves the tree as it was.
set -euo pipefail
build=$(cd "$1" && pwd)
seconds=$2
keep=${3:-}
found=0
for bin in "$build"/tests/fuzz/fuzz_*; do
    [ -x "$bin" ] || continue
    found=1
    name=$(basename "$bin")
    corpus=$PWD/tests/fuzz/corpus/${name#fuzz_}
    mkdir -p "$corpus"
    scratch=$(mktemp -d)
    dirs=("$scratch" "$corpus")
    [ "$keep" = keep ] && dirs=("$corpus")
    log="$scratch.log"
    echo "== $name: ${seconds}s, corpus $corpus"
    if ! (cd "$scratch" && "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "${dirs[@]}") >"$log" 2>&1; then
        tail -n 60 "$log"
        echo "fuzz: $name FAILED (log $log; any crashing input is in $scratch)" >&2
        exit 1
    fi
    grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)|cov:' "$log" | tail -n 3
    rm -rf "$scratch" "$log"
done
[ "$found" -eq 1 ] || { echo "fuzz: no fuzz targets in $build" >&2; exit 1; }
