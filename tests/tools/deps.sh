#!/bin/sh
# Installs, from Debian's packages, whatever building and testing edgelock
# needs and the machine lacks. The library itself needs only a C++17 compiler
# and POSIX sockets; everything here is for the tests, the cross builds and the
# fuzzer (python3-redis: redis-py's Lock, the other lock client of the interop
# tests; musl-tools: the C API's static program built against musl;
# groff-base: the manual's check; lintian, dpkg-dev and file: the Debian
# packages' check, which lints them, lists and unpacks them and reads the
# agent's machine). Valkey
# comes from tests/tools/fetch_valkey.sh, which make deps runs after this. Extra package names may be given as arguments (`make bench` adds its
# own). As root (or with password-less sudo) it installs; otherwise it prints
# the exact command and stops.
set -eu

PACKAGES="cmake make g++ pkg-config catch2 redis-server
g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-user
gcc-arm-none-eabi libstdc++-arm-none-eabi-dev libnewlib-arm-none-eabi
clang libclang-rt-dev clang-format libmbedtls-dev python3-redis musl-tools groff-base
lintian dpkg-dev file
libmbedtls-dev:arm64 libmbedtls-dev:armhf $*"
# The cross builds link the target's mbedTLS from Debian's multiarch packages
# (the :arm64 and :armhf ones above), which need those architectures added.
FOREIGN_ARCHS="arm64 armhf"

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "edgelock deps: not a Debian-like system; make sure these (or equivalents) are installed:" >&2
    echo "  $(echo $PACKAGES)" >&2
    exit 0
fi

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "edgelock deps: all installed"
    exit 0
fi

add_archs=""
for a in $FOREIGN_ARCHS; do
    if ! dpkg --print-foreign-architectures | grep -qx "$a"; then
        add_archs="$add_archs $a"
    fi
done

echo "edgelock deps: missing:$missing"
if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo"
else
    echo "edgelock deps: not root and no password-less sudo; run this, then retry:" >&2
    for a in $add_archs; do
        echo "  sudo dpkg --add-architecture $a" >&2
    done
    echo "  sudo apt-get update && sudo apt-get install -y$missing" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
for a in $add_archs; do
    $sudo dpkg --add-architecture "$a"
done
# A mirror in mid-sync can fail one index (and apt-get update then exits
# non-zero) while the rest is fine: try twice, then let the install say
# whether anything it needs is really missing.
$sudo apt-get update -q || $sudo apt-get update -q || echo "edgelock deps: apt-get update reported errors; installing anyway" >&2
# shellcheck disable=SC2086
$sudo apt-get install -y -q $missing
