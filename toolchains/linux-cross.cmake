# Shared part of the Debian cross toolchain files; set EDGELOCK_CROSS_TRIPLE and
# CMAKE_SYSTEM_PROCESSOR first. A compiler prefix other than Debian's can be
# given with -DEDGELOCK_CROSS_PREFIX=/opt/toolchain/bin/aarch64-linux-gnu-.
if(NOT DEFINED EDGELOCK_CROSS_PREFIX)
    set(EDGELOCK_CROSS_PREFIX ${EDGELOCK_CROSS_TRIPLE}-)
endif()
set(CMAKE_C_COMPILER ${EDGELOCK_CROSS_PREFIX}gcc)
set(CMAKE_CXX_COMPILER ${EDGELOCK_CROSS_PREFIX}g++)

if(NOT DEFINED EDGELOCK_CROSS_SYSROOT)
    set(EDGELOCK_CROSS_SYSROOT /usr/${EDGELOCK_CROSS_TRIPLE})
endif()
set(CMAKE_FIND_ROOT_PATH ${EDGELOCK_CROSS_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# Header-only, architecture-independent packages (Catch2) live on the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# GCC notes an ABI change of 2017 on 32-bit ARM for every std::pair it passes;
# it concerns mixing objects built by GCC 6 and 7, not this build.
if(CMAKE_SYSTEM_PROCESSOR STREQUAL "arm")
    set(CMAKE_CXX_FLAGS_INIT "-Wno-psabi")
endif()

# Run target binaries (tests, test discovery) under user-mode qemu when present.
if(CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
    set(edgelock_qemu qemu-aarch64)
else()
    set(edgelock_qemu qemu-arm)
endif()
find_program(EDGELOCK_QEMU NAMES ${edgelock_qemu} ${edgelock_qemu}-static)
if(EDGELOCK_QEMU)
    # -L lets dynamically linked binaries find the target's loader; static
    # binaries ignore it.
    set(CMAKE_CROSSCOMPILING_EMULATOR ${EDGELOCK_QEMU} -L ${EDGELOCK_CROSS_SYSROOT})
endif()
