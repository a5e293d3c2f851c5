#!/bin/sh
# Reports the code size of the core for an aarch64 gateway at -Os: the RESP
# codec alone and the whole core. Informational; `make bench` records it.
set -eu
CXX=${EDGELOCK_SIZE_CXX:-aarch64-linux-gnu-g++}
SIZE=${CXX%g++}size
FLAGS="-std=c++17 -Os -fno-exceptions -fno-rtti -ffunction-sections -fdata-sections -Iinclude"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for src in src/core/*.cpp; do
    # shellcheck disable=SC2086
    $CXX $FLAGS -c "$src" -o "$out/$(basename "$src" .cpp).o"
done
codec=$($SIZE -t "$out"/resp_*.o | awk 'END {print $1, $2, $3}')
core=$($SIZE -t "$out"/*.o | awk 'END {print $1, $2, $3}')
echo "core size (aarch64, -Os), text/data/bss bytes: codec $codec; whole core $core"
