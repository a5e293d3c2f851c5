# Building for musl (Alpine, OpenWrt) on Debian with its musl-tools package:
#   cmake -S . -B build-musl -DCMAKE_TOOLCHAIN_FILE=toolchains/x86_64-linux-musl.cmake \
#         -DEDGELOCK_STATIC=ON -DEDGELOCK_TESTS=OFF -DEDGELOCK_CLI=OFF -DEDGELOCK_TLS=OFF
# C is compiled and every program linked by musl-gcc. The library's C++ is
# compiled by the host's g++ against musl's C headers (musl-gcc's specs) and
# libstdc++'s headers, of which it uses only templates and constants: nothing
# of libstdc++ (or any C++ runtime) is linked, so a C program links the
# archives with musl-gcc alone. Programs run on the build machine (x86_64).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(EDGELOCK_MUSL_SPECS /usr/lib/x86_64-linux-musl/musl-gcc.specs)
set(CMAKE_C_COMPILER musl-gcc)
set(CMAKE_CXX_COMPILER g++)
execute_process(COMMAND g++ -dumpversion OUTPUT_VARIABLE edgelock_gxx_version
                OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REGEX MATCH "^[0-9]+" edgelock_gxx_major "${edgelock_gxx_version}")
# musl-gcc's specs drop every system include folder: give back libstdc++'s,
# ahead of musl's (its <cstdlib> and friends include the C headers after
# themselves), and the one glibc macro its configuration asks for.
set(CMAKE_CXX_FLAGS_INIT "-specs=${EDGELOCK_MUSL_SPECS} \
-isystem /usr/include/c++/${edgelock_gxx_major} \
-isystem /usr/include/x86_64-linux-gnu/c++/${edgelock_gxx_major} \
-include ${CMAKE_CURRENT_LIST_DIR}/musl-libstdcxx.h")
# Only musl's own files: no glibc library or header is ever picked up.
set(CMAKE_FIND_ROOT_PATH /usr/lib/musl /usr/lib/x86_64-linux-musl)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
