# Cross-compiling for 64-bit ARM Linux gateways with Debian's cross compiler
# (package g++-aarch64-linux-gnu):
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=toolchains/aarch64-linux-gnu.cmake \
#         -DEDGELOCK_STATIC=ON
# When qemu-aarch64 (package qemu-user) is installed, ctest runs the tests under it.
# TLS links the target's mbedTLS: Debian's libmbedtls-dev:arm64 (see CMakeLists.txt).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(EDGELOCK_CROSS_TRIPLE aarch64-linux-gnu)
include(${CMAKE_CURRENT_LIST_DIR}/linux-cross.cmake)
