#!/bin/sh
# check_package.sh HOST_BUILD_DIR WORK_DIR
# Installs the host build into WORK_DIR/prefix and builds and runs a consumer
# three ways: find_package(edgelock CONFIG), add_subdirectory, pkg-config.
set -eu
build=$(cd "$1" && pwd)
src=$(pwd)
rm -rf "$2"
mkdir -p "$2"
work=$(cd "$2" && pwd)
cmake --install "$build" --prefix "$work/prefix" >/dev/null

cmake -S tests/package/find_package -B "$work/find_package" \
    -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/find_package" >/dev/null
"$work/find_package/consumer"

cmake -S tests/package/add_subdirectory -B "$work/add_subdirectory" \
    -DEDGELOCK_SOURCE_DIR="$src" >/dev/null
cmake --build "$work/add_subdirectory" >/dev/null
"$work/add_subdirectory/consumer"

# lib/pkgconfig, or lib/<triplet>/pkgconfig in a tree configured with
# -DEDGELOCK_MULTIARCH=ON.
pcdir=$(dirname "$(find "$work/prefix" -name edgelock.pc | head -n 1)")
PKG_CONFIG_PATH="$pcdir" pkg-config --exists edgelock
# shellcheck disable=SC2046
${CXX:-c++} -std=c++17 -fno-exceptions -fno-rtti -Wall -Wextra -Werror \
    tests/package/consumer.cpp -o "$work/pkg_config_consumer" \
    $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs edgelock)
"$work/pkg_config_consumer"
# A C program through the same pkg-config line, linked by the C compiler:
# the C API needs no C++ runtime.
# shellcheck disable=SC2046
${CC:-cc} -std=c99 -Wall -Wextra -Wpedantic -Werror tests/package/consumer.c \
    -o "$work/pkg_config_c_consumer" \
    $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs edgelock)
"$work/pkg_config_c_consumer"
echo "package: find_package, add_subdirectory and pkg-config consumers (C++ and C) build and run"
