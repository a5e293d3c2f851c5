#!/bin/sh
# Runs every benchmark and writes BENCHMARKS.md: the machine, the command,
# a summary of the targets, then one section per measurement, in the order
# of the list in issue 7 (1-8), then TLS (9), then one job on a slow link
# (10), and on Sentinel and Cluster nodes there (11), then the agent beside
# redis-py on a lossy link (12; LOSSY_RUNS runs per profile, default 30).
# Usage: tests/bench/run.sh BUILD_DIR, after the benchmarks were built
# in BUILD_DIR/bench (make bench does both).
# BENCHMARKS.md is replaced only when every benchmark succeeded.
set -eu
build=${1:-build}
bin="$build/bench/tests/bench"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

started=$(date +%s)
run() {
    name=$1
    shift
    echo "== bench: $name" >&2
    if ! "$@" >"$out/$name.md"; then
        echo "bench: $name failed; BENCHMARKS.md left as it was" >&2
        exit 1
    fi
    cat "$out/$name.md"
}
run resp_decode "$bin/bench_resp_decode"
run cycle "$bin/bench_cycle"
run redlock "$bin/bench_redlock"
run many_locks "$bin/bench_many_locks"
run handoff "$bin/bench_handoff"
run tls "$bin/bench_tls"
run slow_link "$bin/bench_slow_link"
run slow_topology "$bin/bench_slow_topology"
run lossy_link "$bin/bench_lossy_link" --runs "${LOSSY_RUNS:-30}"
run footprint sh tests/bench/footprint.sh "$build"
elapsed=$(($(date +%s) - started))

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
[ -n "$cpu" ] || cpu=$(uname -m)
mem=$(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo 2>/dev/null || echo "?")
hiredis=$(pkg-config --modversion hiredis 2>/dev/null || echo "?")
redis=$(redis-server --version | sed 's/.* v=\([^ ]*\).*/\1/')
redis_cli=$(redis-cli --version 2>/dev/null | sed 's/^redis-cli //')
valgrind=$(valgrind --version 2>/dev/null || echo "?")
commit=$(git rev-parse --short HEAD 2>/dev/null || echo "?")

{
    cat <<EOF
# Benchmarks

Written by \`make bench\` (tests/bench/run.sh); every figure below comes from the
one run described here, taken side by side with its peer on the same machine. The
benchmarks measure; no test asserts a timing. Rerun \`make bench\` to refresh this file.

| | |
|---|---|
| command | \`make bench\` |
| date | $(date -u '+%Y-%m-%d %H:%M UTC') |
| commit | $commit |
| machine | $cpu, $(nproc) cores, $mem, Linux $(uname -r) |
| compiler | $(c++ --version | head -n 1) |
| redis-server | $redis |
| peer | hiredis $hiredis (Debian's libhiredis-dev), redis-cli $redis_cli (Debian's redis-tools) |
| instruments | $valgrind, redis-benchmark $redis |
| run time | $elapsed s for the benchmarks (build not included) |

## Targets

| measurement | target | result |
|---|---|---|
EOF
    # Every section states its targets on lines "Target: TEXT: **met|missed** (FIGURE)."
    for f in resp_decode cycle redlock many_locks handoff footprint tls slow_link slow_topology lossy_link; do
        awk '
            /^## / { section = substr($0, 4) }
            /^Target/ {
                line = $0
                label = ""
                if (match(line, /^Target \([^)]*\)/)) {
                    label = " (" substr(line, 9, RLENGTH - 9) ")"
                }
                sub(/^Target[^:]*: */, "", line)
                verdict = line
                sub(/.*\*\*/, "", verdict)
                match(line, /\*\*[a-z]+\*\*/)
                result = substr(line, RSTART + 2, RLENGTH - 4)
                text = substr(line, 1, RSTART - 1)
                sub(/[: ]+$/, "", text)
                rest = substr(line, RSTART + RLENGTH)
                sub(/^ */, "", rest)
                sub(/\.$/, "", rest)
                print "| " section label " | " text " | " result " " rest " |"
            }' "$out/$f.md"
    done
    echo
    for f in resp_decode cycle redlock many_locks handoff footprint tls slow_link slow_topology lossy_link; do
        cat "$out/$f.md"
        echo
    done
} | cat -s >"$out/BENCHMARKS.md"
mv "$out/BENCHMARKS.md" BENCHMARKS.md
echo "bench: BENCHMARKS.md written ($elapsed s)" >&2
