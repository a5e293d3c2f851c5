/* Force-included in C++ compiled for musl (toolchains/x86_64-linux-musl.cmake):
 * libstdc++'s configuration headers ask glibc's version with this macro,
 * which musl does not have. No glibc-only feature is then assumed. */
#ifndef __GLIBC_PREREQ
#define __GLIBC_PREREQ(major, minor) 0
#endif
