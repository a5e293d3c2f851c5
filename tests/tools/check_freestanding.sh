#!/bin/sh
# Proves the core (src/core) needs no hosted library and no operating system:
#  1. every core source compiles with arm-none-eabi-g++ -ffreestanding
#     -fno-exceptions -fno-rtti, warnings as errors;
#  2. the only standard headers the core and the project headers it uses
#     include are freestanding ones;
#  3. the objects reference no outside symbol but the few a compiler emits
#     calls to by itself (mem*, ARM EABI helpers): no malloc, no operator new,
#     no syscalls, no exception or RTTI runtime.
set -eu

CXX=${EDGELOCK_FREESTANDING_CXX:-arm-none-eabi-g++}
NM=${CXX%g++}nm
FLAGS="-std=c++17 -ffreestanding -fno-exceptions -fno-rtti -Os -mcpu=cortex-m4 -mthumb
-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror -Iinclude"
ALLOWED_HEADERS="cstddef cstdint limits type_traits new initializer_list"
ALLOWED_SYMBOLS='^(memcpy|memmove|memset|memcmp|__aeabi_[a-z0-9_]+|__cxa_pure_virtual)$'

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0

for src in src/core/*.cpp; do
    obj="$out/$(basename "$src" .cpp).o"
    # shellcheck disable=SC2086
    $CXX $FLAGS -c "$src" -o "$obj"
    # shellcheck disable=SC2086
    $CXX $FLAGS -MM "$src" | tr ' \\' '\n\n' | grep -E '\.(hpp|cpp)$' >>"$out/files"
done

for f in $(sort -u "$out/files"); do
    for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\([^>]*\)>.*/\1/p' "$f"); do
        case " $ALLOWED_HEADERS " in
        *" $h "*) ;;
        *)
            echo "freestanding: $f includes <$h>, which is not a freestanding header" >&2
            status=1
            ;;
        esac
    done
done

# The core as one relocatable object: what it still needs from outside.
${CXX%g++}ld -r -o "$out/core.all" "$out"/*.o
for sym in $($NM -u "$out/core.all" | awk '{print $NF}'); do
    if ! echo "$sym" | grep -Eq "$ALLOWED_SYMBOLS"; then
        echo "freestanding: the core references $sym" >&2
        status=1
    fi
done

n=$(ls src/core/*.cpp | wc -l)
if [ "$status" -eq 0 ]; then
    echo "freestanding: $n core sources compile with $CXX -ffreestanding; headers and symbols clean"
fi
exit "$status"
