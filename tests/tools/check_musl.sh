#!/bin/sh
# The library built for musl, and a static C program on it: the C API's tests
# (tests/c), compiled and linked by musl-gcc alone, run against redis-server.
# The library's C++ is compiled by g++ against musl's headers
# (toolchains/x86_64-linux-musl.cmake); nothing of a C++ runtime is linked.
#   sh tests/tools/check_musl.sh BUILD_DIR
set -eu

build=${1:?usage: check_musl.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v musl-gcc >/dev/null 2>&1; then
    echo "check-musl: musl-gcc is missing (make deps installs musl-tools)" >&2
    exit 1
fi
if [ "$(uname -m)" != x86_64 ]; then
    echo "check-musl: SKIPPED: the musl toolchain file is for x86_64 hosts"
    exit 0
fi

cmake -S "$src" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$src/toolchains/x86_64-linux-musl.cmake" \
    -DCMAKE_BUILD_TYPE=MinSizeRel -DEDGELOCK_STATIC=ON -DEDGELOCK_WERROR=ON \
    -DEDGELOCK_TESTS=OFF -DEDGELOCK_CLI=OFF -DEDGELOCK_TLS=OFF -DEDGELOCK_BENCH=OFF \
    -DEDGELOCK_EXAMPLES=ON -DEDGELOCK_INSTALL=OFF >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log" >&2; exit 1; }
cmake --build "$build" --target edgelock edgelock_port_posix c_daemon -j "${JOBS:-2}"

# The C tests as one static program. No TLS here (mbedTLS is not built for
# musl): its cases say so and are skipped.
prog="$build/edgelock_c_tests_musl"
# shellcheck disable=SC2046
musl-gcc -std=c99 -Wall -Wextra -Wpedantic -Werror -Os -static -I"$src/include" \
    $(ls "$src"/tests/c/*.c | grep -v '/header_c11\.c$') \
    "$build/libedgelock.a" "$build/libedgelock_port_posix.a" "$build/libedgelock.a" \
    -o "$prog"

kind=$(file -b "$prog")
echo "check-musl: $prog: $kind"
case "$kind" in
    *"statically linked"*) ;;
    *) echo "check-musl: FAILED: not statically linked" >&2; exit 1 ;;
esac
sh "$src/tests/c/check_no_cxx_runtime.sh" "$prog"

# The cases that go through the port: sockets, the clock, randomness.
for c in blocking contention event-loop lost semaphore node-down; do
    if ! "$prog" "$c"; then
        echo "check-musl: FAILED: case $c" >&2
        exit 1
    fi
    echo "check-musl: case $c passed"
done
# The example daemon, static on musl too: its own poll() loop takes the lock,
# works while the watchdog renews it, and releases it at the end, against a
# redis-server on a unix socket of its own.
daemon="$build/examples/c_daemon"
kind=$(file -b "$daemon")
case "$kind" in
    *"statically linked"*) ;;
    *) echo "check-musl: FAILED: c_daemon is not statically linked: $kind" >&2; exit 1 ;;
esac
run=$(mktemp -d)
redis-server --port 0 --unixsocket "$run/redis.sock" --save "" --appendonly no \
    --dir "$run" >"$run/redis.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$run"' EXIT
tries=0
until redis-cli -s "$run/redis.sock" ping >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ $tries -gt 100 ]; then
        echo "check-musl: FAILED: redis-server did not answer on its socket" >&2
        cat "$run/redis.log" >&2
        exit 1
    fi
    sleep 0.1
done
timeout 20 "$daemon" "unix://$run/redis.sock" musl-daemon 2 >"$run/daemon.out" 2>&1 || {
    echo "check-musl: FAILED: c_daemon exited $?:" >&2; cat "$run/daemon.out" >&2; exit 1; }
if ! grep -q '^acquired' "$run/daemon.out" || ! grep -q '^released' "$run/daemon.out" ||
   [ "$(redis-cli -s "$run/redis.sock" exists musl-daemon)" != 0 ]; then
    echo "check-musl: FAILED: c_daemon did not acquire and release:" >&2
    cat "$run/daemon.out" >&2
    exit 1
fi
echo "check-musl: c_daemon acquired, worked and released on musl"

strip -o "$run/prog" "$prog"
strip -o "$run/daemon" "$daemon"
echo "check-musl: static on musl, stripped: the C tests $(wc -c <"$run/prog") bytes," \
    "the c_daemon example $(wc -c <"$run/daemon") bytes"
