#!/bin/sh
# check_deb.sh PACKAGES_DIR WORK_DIR
# The Debian packages of make package, for amd64, arm64 and armhf:
# - lintian on all of them (one run: most of its time is its start);
# - each one's files, exactly, and control fields; the agent's machine;
# - the agent unpacked and run (the arm ones under qemu-user): --version, and
#   a run against a redis-server started here;
# - a consumer of each libedgelock-dev built through pkg-config (the arm ones
#   cross-compiled, statically, and run under qemu), and of the build
#   machine's through find_package too.
set -eu

pkgs=$(cd "${1:?usage: check_deb.sh PACKAGES_DIR WORK_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "${2:?usage: check_deb.sh PACKAGES_DIR WORK_DIR}"
mkdir -p "$2"
work=$(cd "$2" && pwd)
cd "$src"

fail() {
    echo "check-deb: FAILED: $*" >&2
    exit 1
}
say() { echo "check-deb: $*"; }

version=$(sed -n 's/^ *VERSION \([0-9][0-9.]*\)$/\1/p' CMakeLists.txt | head -n 1)
[ -n "$version" ] || fail "no VERSION in CMakeLists.txt's project()"
host_arch=$(dpkg --print-architecture)

# The one package of NAME for ARCH in $pkgs.
deb_of() {
    set -- "$pkgs/$1_$version"-*"_$2.deb"
    if [ $# -ne 1 ] || [ ! -f "$1" ]; then
        fail "not exactly one package for $(basename "$1")"
    fi
    echo "$1"
}

# --- a redis-server on a free loopback port, stopped however this ends --------
redis_pid=""
cleanup() {
    if [ -n "$redis_pid" ]; then
        kill "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$work" \
    >"$work/redis.log" 2>&1 &
redis_pid=$!
tries=0
until redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; do
    tries=$((tries + 1))
    [ $tries -lt 100 ] || { cat "$work/redis.log" >&2; fail "redis-server on port $port did not start"; }
    kill -0 "$redis_pid" 2>/dev/null || { cat "$work/redis.log" >&2; fail "redis-server exited"; }
    sleep 0.1
done
say "redis-server on 127.0.0.1:$port"

# --- lintian -------------------------------------------------------------------
all_debs=""
for arch in amd64 arm64 armhf; do
    for name in edgelock libedgelock-dev; do
        deb=$(deb_of $name $arch)
        all_debs="$all_debs $deb"
    done
done
# Errors and warnings fail; informational tags are shown. The overrides are
# in the packages (from cmake/lintian/, each with its reason); they are listed
# below, not by lintian (its --show-overrides makes them count as failures).
start=$(date +%s)
lintian_status=0
# shellcheck disable=SC2086
lintian --fail-on error,warning --display-info $all_debs >"$work/lintian.log" 2>&1 ||
    lintian_status=$?
seconds=$(($(date +%s) - start))
grep -v '^running with root privileges' "$work/lintian.log" || true
[ $lintian_status -eq 0 ] || fail "lintian: errors or warnings (above), status $lintian_status"
say "lintian: 6 packages clean of errors and warnings; $seconds s for one run over all six"
grep -hv '^#' cmake/lintian/* | sed 's/^/check-deb: lintian override: /'

# Sorted file list (no folders) of a package, build-specific names generalised.
files_of() {
    dpkg-deb -c "$1" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./||' |
        sed 's|edgelock-targets-[a-z]*\.cmake$|edgelock-targets-CONFIG.cmake|' | LC_ALL=C sort
}

# check_files DEB EXPECTED_FILE: the package holds exactly the expected files.
check_files() {
    files_of "$1" >"$2.actual"
    LC_ALL=C sort -o "$2" "$2"
    if ! diff -u "$2" "$2.actual" >"$2.diff"; then
        cat "$2.diff" >&2
        fail "$(basename "$1"): files differ from the expected ones (- missing, + unexpected)"
    fi
}

# check_field DEB FIELD VALUE
check_field() {
    got=$(dpkg-deb -f "$1" "$2")
    [ "$got" = "$3" ] || fail "$(basename "$1"): $2 is '$got', expected '$3'"
}

# No path of this machine's tree in any file of an unpacked package.
check_no_build_paths() {
    if grep -rlaF -e "$src/" "$1" >"$1.paths"; then
        cat "$1.paths" >&2
        fail "build paths ($src/...) in the files above"
    fi
}

for arch in amd64 arm64 armhf; do
    case $arch in
        amd64) triplet=x86_64-linux-gnu machine=x86-64 cross=x86_64-linux-gnu- qemu=qemu-x86_64 ;;
        arm64) triplet=aarch64-linux-gnu machine="ARM aarch64" cross=aarch64-linux-gnu- qemu=qemu-aarch64 ;;
        armhf) triplet=arm-linux-gnueabihf machine="ARM, EABI5" cross=arm-linux-gnueabihf- qemu=qemu-arm ;;
    esac
    if [ "$arch" = "$host_arch" ]; then
        run="" cxx=${CXX:-c++}
    else
        run=$qemu cxx=${cross}g++
    fi
    dir="$work/$arch"
    mkdir -p "$dir"
    agent=$(deb_of edgelock $arch)
    dev=$(deb_of libedgelock-dev $arch)

    # --- the agent's package ---------------------------------------------------
    check_field "$agent" Package edgelock
    check_field "$agent" Architecture $arch
    check_field "$agent" Section admin
    check_field "$agent" Depends ""
    case $(dpkg-deb -f "$agent" Version) in
        "$version"-*) ;;
        *) fail "$(basename "$agent"): Version is not $version-N" ;;
    esac
    cat >"$dir/agent.expected" <<EOF
usr/bin/edgelock
usr/share/doc/edgelock/changelog.Debian.gz
usr/share/doc/edgelock/copyright
usr/share/doc/edgelock/examples/edgelock-job.service
usr/share/doc/edgelock/examples/edgelock-job.timer
usr/share/doc/edgelock/examples/edgelock-standby.service
usr/share/doc/edgelock/examples/nightly-upload.sh
usr/share/lintian/overrides/edgelock
usr/share/man/man1/edgelock.1.gz
EOF
    if [ -f examples/edgelock.conf ]; then
        echo usr/share/doc/edgelock/examples/edgelock.conf >>"$dir/agent.expected"
    fi
    check_files "$agent" "$dir/agent.expected"
    dpkg-deb -x "$agent" "$dir/agent"
    check_no_build_paths "$dir/agent"
    gzip -t "$dir/agent/usr/share/man/man1/edgelock.1.gz" || fail "the manual is not gzipped"
    kind=$(file -b "$dir/agent/usr/bin/edgelock")
    case $kind in
        *"$machine"*"statically linked"*) ;;
        *) fail "$arch agent: '$kind': expected $machine, statically linked" ;;
    esac
    got=$($run "$dir/agent/usr/bin/edgelock" --version)
    [ "$got" = "edgelock $version" ] || fail "$arch agent --version says '$got'"
    # The command finds the lock held on the server; after the run it is gone.
    key=check-deb-$arch
    $run "$dir/agent/usr/bin/edgelock" run -N "redis://127.0.0.1:$port" "$key" -- \
        redis-cli -h 127.0.0.1 -p "$port" --no-raw exists "$key" >"$dir/run.out" ||
        fail "$arch agent: run against redis-server exited $?"
    [ "$(cat "$dir/run.out")" = "(integer) 1" ] ||
        fail "$arch agent: the key was not held during the run: $(cat "$dir/run.out")"
    [ "$(redis-cli -h 127.0.0.1 -p "$port" exists "$key")" = 0 ] ||
        fail "$arch agent: the key is still there after the run"
    say "$arch: $(basename "$agent"), $(stat -c %s "$agent") bytes: the $(wc -l <"$dir/agent.expected") files expected; $machine, statically linked; --version, and a run holds the lock on redis-server${run:+ under $run}"

    # --- the library's package ---------------------------------------------------
    check_field "$dev" Package libedgelock-dev
    check_field "$dev" Architecture $arch
    check_field "$dev" Section libdevel
    case $(dpkg-deb -f "$dev" Depends) in
        *libmbedtls-dev*) ;;
        *) fail "$(basename "$dev"): ships the TLS archive but does not depend on libmbedtls-dev" ;;
    esac
    lib=usr/lib/$triplet
    {
        (cd include && find edgelock -type f) | sed 's|^|usr/include/|'
        cat <<EOF
$lib/cmake/edgelock/edgelock-config-version.cmake
$lib/cmake/edgelock/edgelock-config.cmake
$lib/cmake/edgelock/edgelock-targets-CONFIG.cmake
$lib/cmake/edgelock/edgelock-targets.cmake
$lib/libedgelock.a
$lib/libedgelock_port_posix.a
$lib/libedgelock_tls_mbedtls.a
$lib/pkgconfig/edgelock.pc
usr/share/doc/libedgelock-dev/changelog.Debian.gz
usr/share/doc/libedgelock-dev/copyright
usr/share/lintian/overrides/libedgelock-dev
EOF
    } >"$dir/dev.expected"
    check_files "$dev" "$dir/dev.expected"
    dpkg-deb -x "$dev" "$dir/dev"
    check_no_build_paths "$dir/dev"

    # A C++ consumer through pkg-config, as a cross build finds it in a sysroot.
    pc="env PKG_CONFIG_SYSROOT_DIR=$dir/dev PKG_CONFIG_LIBDIR=$dir/dev/$lib/pkgconfig pkg-config"
    $pc --exists edgelock || fail "$arch: pkg-config does not find edgelock in the package"
    [ "$($pc --modversion edgelock)" = "$version" ] || fail "$arch: edgelock.pc's version"
    static=""
    [ -z "$run" ] || static=-static
    # shellcheck disable=SC2046
    "$cxx" -std=c++17 -fno-exceptions -fno-rtti -Wall -Wextra -Werror $static \
        tests/package/consumer.cpp -o "$dir/pkg_config_consumer" $($pc --cflags --libs edgelock)
    $run "$dir/pkg_config_consumer" >/dev/null || fail "$arch: the pkg-config consumer failed"
    checked="C++ consumer through pkg-config${run:+ (under $run)}"

    if [ -z "$run" ]; then
        # shellcheck disable=SC2046
        "${CC:-cc}" -std=c99 -Wall -Wextra -Wpedantic -Werror tests/package/consumer.c \
            -o "$dir/pkg_config_c_consumer" $($pc --cflags --libs edgelock)
        "$dir/pkg_config_c_consumer" >/dev/null || fail "$arch: the pkg-config C consumer failed"
        cmake -S tests/package/find_package -B "$dir/find_package" \
            -DCMAKE_PREFIX_PATH="$dir/dev/usr" >"$dir/find_package.log" 2>&1 ||
            { cat "$dir/find_package.log" >&2; fail "$arch: find_package(edgelock) failed"; }
        cmake --build "$dir/find_package" >>"$dir/find_package.log" 2>&1 ||
            { cat "$dir/find_package.log" >&2; fail "$arch: the find_package consumer did not build"; }
        grep -q "$dir/dev/usr/lib/$triplet/cmake/edgelock" "$dir/find_package/CMakeCache.txt" ||
            fail "$arch: find_package found another edgelock than the package's"
        "$dir/find_package/consumer" >/dev/null || fail "$arch: the find_package consumer failed"
        checked="$checked, C consumer through pkg-config, C++ consumer through find_package"
    fi
    say "$arch: $(basename "$dev"), $(stat -c %s "$dev") bytes: the $(wc -l <"$dir/dev.expected") files expected; $checked"
done
say "all packages checked"
