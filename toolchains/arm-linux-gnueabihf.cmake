# Cross-compiling for 32-bit ARM Linux (armhf: ARMv7, hard float) with Debian's
# cross compiler (package g++-arm-linux-gnueabihf):
#   cmake -S . -B build-armhf -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-linux-gnueabihf.cmake \
#         -DEDGELOCK_STATIC=ON
# When qemu-arm (package qemu-user) is installed, ctest runs the tests under it.
# TLS links the target's mbedTLS: Debian's libmbedtls-dev:armhf (see CMakeLists.txt).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(EDGELOCK_CROSS_TRIPLE arm-linux-gnueabihf)
include(${CMAKE_CURRENT_LIST_DIR}/linux-cross.cmake)
