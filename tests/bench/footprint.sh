#!/bin/sh
# Footprint (BENCHMARKS.md section 8): prints one Markdown section.
#   - the core (codec + lock state machine) compiled for aarch64 at -Os the way
#     a firmware build would (-fno-exceptions -fno-rtti, one section per
#     function, no unwind tables), counted per ELF section;
#   - sizeof the main objects on aarch64 and armhf (read off the compiler:
#     arrays of that many bytes, measured with nm, so nothing runs);
#   - the static `edgelock` agent built with -Os (MinSizeRel) for x86_64,
#     aarch64 and armhf, stripped, next to a static program that does nothing,
#     built with the same compiler and flags: what the C and C++ runtimes weigh;
#     then the same agents with TLS (mbedTLS linked statically): what TLS adds.
# Usage: tests/bench/footprint.sh BUILD_DIR   (build trees go under BUILD_DIR)
set -eu
build=${1:-build}
jobs=${JOBS:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

FLAGS="-std=c++17 -Os -fno-exceptions -fno-rtti -ffunction-sections -fdata-sections \
-fno-asynchronous-unwind-tables -fno-unwind-tables -Iinclude"

# Bytes of the sections whose names match a pattern, over some objects
# (readelf's section table; sizes are hex).
sum_sections() {
    pattern=$1
    shift
    total=0
    for o in "$@"; do
        for hex in $(aarch64-linux-gnu-readelf -S -W "$o" |
            sed -n 's/^ *\[ *[0-9]*\] *//p' | awk -v pat="$pattern" '$1 ~ pat {print $5}'); do
            total=$((total + 0x$hex))
        done
    done
    echo "$total"
}

for src in src/core/*.cpp; do
    # shellcheck disable=SC2086
    aarch64-linux-gnu-g++ $FLAGS -c "$src" -o "$work/$(basename "$src" .cpp).o"
done
codec="$work/resp_decoder.o $work/resp_lexical.o $work/resp_encoder.o"
machine="$work/lock.o $work/lock_io.o $work/lock_notify.o $work/lock_reply.o $work/lock_request.o \
$work/lock_rounds.o $work/lock_scripts.o $work/permit_request.o $work/lock_transmit.o $work/redlock.o $work/renewal_mark.o \
$work/token.o"
describe="$work/resp_describe.o $work/lock_describe.o"
# Every core source is in one of the groups: a file split off later must not
# drop out of the figures unseen.
for obj in "$work"/*.o; do
    case " $codec $machine $describe " in
    *" $obj "*) ;;
    *)
        echo "footprint: $(basename "$obj" .o).cpp is in no group; add it above" >&2
        exit 1
        ;;
    esac
done

row() {
    label=$1
    shift
    code=$(sum_sections '^\.text' "$@")
    ro=$(sum_sections '^\.rodata' "$@")
    data=$(sum_sections '^\.data' "$@")
    bss=$(sum_sections '^\.bss' "$@")
    echo "| $label | $code | $ro | $((code + ro)) | $data | $bss |"
}

# shellcheck disable=SC2086
code_all=$(sum_sections '^\.text' $codec $machine)
# shellcheck disable=SC2086
ro_all=$(sum_sections '^\.rodata' $codec $machine)
text_all=$((code_all + ro_all))
# sizeof, per target ABI, without running anything.
cat >"$work/sizes.cpp" <<'EOF'
#include "edgelock/client.hpp"
#include "edgelock/resp_decoder.hpp"
char sizeof_lock[sizeof(edgelock::lock)];
char sizeof_client_lock[sizeof(edgelock::client_lock)];
char sizeof_client_1[sizeof(edgelock::client<1>)];
char sizeof_client_5[sizeof(edgelock::client<5>)];
char sizeof_connection[sizeof(edgelock::detail::connection)];
char sizeof_resp_decoder[sizeof(edgelock::resp_decoder)];
char sizeof_resp_node[sizeof(edgelock::resp_node)];
EOF
sizeof_for() {
    cxx=$1
    nm=${cxx%g++}nm
    # shellcheck disable=SC2086
    $cxx $FLAGS -c "$work/sizes.cpp" -o "$work/sizes-$2.o"
    $nm -S "$work/sizes-$2.o" | awk '{print $4, $2}' | while read -r name hex; do
        echo "$name $((0x$hex))"
    done
}
sizeof_for aarch64-linux-gnu-g++ a64 >"$work/sizes-a64.txt"
sizeof_for arm-linux-gnueabihf-g++ a32 >"$work/sizes-a32.txt"
size_of() { awk -v n="sizeof_$1" '$1 == n {print $2}' "$work/sizes-$2.txt"; }

# Static agents, -Os, stripped.
agent() {
    arch=$1
    tls=${2:-OFF}
    dir="$build/bench-static-$arch"
    [ "$tls" = ON ] && dir="$dir-tls"
    toolchain=""
    case $arch in
        aarch64) toolchain="-DCMAKE_TOOLCHAIN_FILE=toolchains/aarch64-linux-gnu.cmake" ;;
        armhf) toolchain="-DCMAKE_TOOLCHAIN_FILE=toolchains/arm-linux-gnueabihf.cmake" ;;
    esac
    # shellcheck disable=SC2086
    cmake -S . -B "$dir" $toolchain -DCMAKE_BUILD_TYPE=MinSizeRel -DEDGELOCK_STATIC=ON \
        -DEDGELOCK_TLS="$tls" -DEDGELOCK_TESTS=OFF -DEDGELOCK_BENCH=OFF -DEDGELOCK_EXAMPLES=OFF \
        -DEDGELOCK_INSTALL=OFF >"$work/cmake-$arch.log" 2>&1 ||
        { cat "$work/cmake-$arch.log" >&2; exit 1; }
    cmake --build "$dir" -j "$jobs" --target edgelock_cli >"$work/build-$arch.log" 2>&1 ||
        { cat "$work/build-$arch.log" >&2; exit 1; }
}
strip_for() {
    case $1 in
        x86_64) echo strip ;;
        aarch64) echo aarch64-linux-gnu-strip ;;
        armhf) echo arm-linux-gnueabihf-strip ;;
    esac
}
cxx_for() {
    case $1 in
        x86_64) echo g++ ;;
        aarch64) echo aarch64-linux-gnu-g++ ;;
        armhf) echo arm-linux-gnueabihf-g++ ;;
    esac
}
agent_rows=""
for arch in x86_64 aarch64 armhf; do
    echo "footprint: static agent for $arch" >&2
    agent "$arch"
    strip=$(strip_for "$arch")
    cp "$build/bench-static-$arch/edgelock" "$work/edgelock-$arch"
    "$strip" "$work/edgelock-$arch"
    echo 'int main() { return 0; }' >"$work/empty.cpp"
    "$(cxx_for "$arch")" -Os -static -fno-exceptions -fno-rtti "$work/empty.cpp" -o "$work/empty-$arch"
    "$strip" "$work/empty-$arch"
    full=$(wc -c <"$build/bench-static-$arch/edgelock")
    stripped=$(wc -c <"$work/edgelock-$arch")
    empty=$(wc -c <"$work/empty-$arch")
    agent_rows="$agent_rows| $arch | $stripped | $full | $empty | $((stripped - empty)) |
"
done
# The same agents with TLS: mbedTLS linked statically (the host's for x86_64,
# Debian's multiarch archives for the cross builds). An architecture without
# an mbedTLS to link gets no row.
tls_rows=""
for arch in x86_64 aarch64 armhf; do
    echo "footprint: static agent for $arch with TLS" >&2
    agent "$arch" ON
    dir="$build/bench-static-$arch-tls"
    grep -q '^EDGELOCK_MBEDTLS_LIBRARY:FILEPATH=/' "$dir/CMakeCache.txt" || continue
    cp "$dir/edgelock" "$work/edgelock-$arch-tls"
    "$(strip_for "$arch")" "$work/edgelock-$arch-tls"
    full=$(wc -c <"$dir/edgelock")
    stripped=$(wc -c <"$work/edgelock-$arch-tls")
    plain=$(wc -c <"$work/edgelock-$arch")
    empty=$(wc -c <"$work/empty-$arch")
    tls_rows="$tls_rows| $arch with TLS (+$((stripped - plain)) for mbedTLS) | $stripped | $full | $empty | $((stripped - empty)) |
"
done

# A C program on the C API: the example daemon (examples/c_daemon.c), static,
# against musl (musl-gcc; the library's C++ compiled against musl's headers,
# toolchains/x86_64-linux-musl.cmake) and against glibc, each next to an
# empty static C program of the same C library. No C++ runtime in either.
c_daemon() {
    libc=$1
    dir="$build/bench-c-$libc"
    toolchain=""
    [ "$libc" = musl ] && toolchain="-DCMAKE_TOOLCHAIN_FILE=toolchains/x86_64-linux-musl.cmake"
    # shellcheck disable=SC2086
    cmake -S . -B "$dir" $toolchain -DCMAKE_BUILD_TYPE=MinSizeRel -DEDGELOCK_STATIC=ON \
        -DEDGELOCK_TLS=OFF -DEDGELOCK_TESTS=OFF -DEDGELOCK_BENCH=OFF -DEDGELOCK_EXAMPLES=ON \
        -DEDGELOCK_CLI=OFF -DEDGELOCK_INSTALL=OFF \
        -DCMAKE_C_FLAGS_MINSIZEREL="-Os -DNDEBUG -ffunction-sections -fdata-sections" \
        -DCMAKE_CXX_FLAGS_MINSIZEREL="-Os -DNDEBUG -ffunction-sections -fdata-sections" \
        -DCMAKE_EXE_LINKER_FLAGS=-Wl,--gc-sections >"$work/cmake-c-$libc.log" 2>&1 ||
        { cat "$work/cmake-c-$libc.log" >&2; exit 1; }
    cmake --build "$dir" -j "$jobs" --target c_daemon >"$work/build-c-$libc.log" 2>&1 ||
        { cat "$work/build-c-$libc.log" >&2; exit 1; }
    cc=gcc
    [ "$libc" = musl ] && cc=musl-gcc
    echo 'int main(void) { return 0; }' >"$work/empty.c"
    "$cc" -Os -static "$work/empty.c" -o "$work/empty-c-$libc"
    strip "$work/empty-c-$libc"
    strip -o "$work/c_daemon-$libc" "$dir/examples/c_daemon"
    full=$(wc -c <"$dir/examples/c_daemon")
    stripped=$(wc -c <"$work/c_daemon-$libc")
    empty=$(wc -c <"$work/empty-c-$libc")
    echo "| x86_64, $libc | $stripped | $full | $empty | $((stripped - empty)) |"
}
c_rows=""
if command -v musl-gcc >/dev/null 2>&1 && [ "$(uname -m)" = x86_64 ]; then
    for libc in musl glibc; do
        echo "footprint: static C daemon on $libc" >&2
        c_rows="$c_rows$(c_daemon "$libc")
"
    done
fi

verdict=missed
[ "$text_all" -lt 16384 ] && verdict=met

cat <<EOF
## 8. Footprint

The core (\`src/core\`: codec and lock state machine) compiled with
\`aarch64-linux-gnu-g++ $(aarch64-linux-gnu-g++ -dumpversion)\` at \`-Os -fno-exceptions -fno-rtti
-ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables\`, counted per ELF
section (readelf). "text" is code plus read-only data, as \`size\` counts it; the Lua
scripts (sent again with EVAL when a server has lost them) are read-only data of the
state machine. The \`describe()\` functions only turn codes into messages; a program that
never calls them loses them to \`--gc-sections\`.

| | code (.text) | read-only (.rodata) | text | .data | .bss |
|---|---:|---:|---:|---:|---:|
$(row "codec (resp_decoder, resp_lexical, resp_encoder)" $codec)
$(row "state machine (lock, lock_io, lock_notify, lock_reply, lock_request, lock_rounds, lock_scripts, permit_request, lock_transmit, redlock, renewal_mark, token)" $machine)
$(row "codec + state machine" $codec $machine)
$(row "all of the core, describe() included" $codec $machine $describe)
$(row "describe() (resp_describe, lock_describe)" $describe)

Target: codec + state machine under 16 KB (16,384 bytes) of text: **$verdict** ($text_all bytes).

Sizes of objects (bytes), read off the compilers:

| | aarch64 | armhf |
|---|---:|---:|
| \`lock\` (the state machine, one lock) | $(size_of lock a64) | $(size_of lock a32) |
| \`client_lock\` (lock + watchdog, on a client) | $(size_of client_lock a64) | $(size_of client_lock a32) |
| \`client<1>\` | $(size_of client_1 a64) | $(size_of client_1 a32) |
| \`client<5>\` | $(size_of client_5 a64) | $(size_of client_5 a32) |
| one node's connection (buffers: 2 KB in, 2 KB out, 64 in flight) | $(size_of connection a64) | $(size_of connection a32) |
| \`resp_decoder\` | $(size_of resp_decoder a64) | $(size_of resp_decoder a32) |
| \`resp_node\` | $(size_of resp_node a64) | $(size_of resp_node a32) |

The static \`edgelock\` agent (\`-DEDGELOCK_STATIC=ON\`, MinSizeRel, without TLS), in bytes,
next to a static program whose \`main\` returns 0, built by the same compiler with the
same flags: the C library's and C++ runtime's share. The TLS rows link Debian's mbedTLS
(all of its features, as the distribution configures them) statically.

| | edgelock, stripped | not stripped | empty static program, stripped | difference |
|---|---:|---:|---:|---:|
$agent_rows$tls_rows
A C daemon on the C API (\`examples/c_daemon.c\`: its own \`poll()\` loop, a fenced lock,
the watchdog), static, MinSizeRel with \`--gc-sections\`, linked by the C compiler with
no C++ runtime: against musl (\`musl-gcc\`; the library's C++ compiled by g++ against
musl's headers, \`toolchains/x86_64-linux-musl.cmake\`) and against glibc, each next to
an empty static C program of the same C library. \`make test\` runs the musl one against
a redis-server (\`tests/tools/check_musl.sh\`).

| | c_daemon, stripped | not stripped | empty static C program, stripped | difference |
|---|---:|---:|---:|---:|
$c_rows
EOF
