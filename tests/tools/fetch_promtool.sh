#!/bin/sh
# Puts promtool, from Debian's prometheus package, at OUT_DIR/promtool for the
# agent's metrics tests (`promtool check metrics`), without installing the
# package: `apt-get download` into a temporary folder, `dpkg -x`, and a copy of
# usr/bin/promtool. The machine's own package lists are tried first; when they
# do not have it, a private sources list and package lists, as
# fetch_valkey.sh does, leaving the machine's apt state as it was.
# Does nothing when OUT_DIR/promtool already runs. When it cannot be fetched
# it says why and exits 0: the tests then skip promtool, with that reason.
#   sh tests/tools/fetch_promtool.sh build/promtool
set -u

out=${1:?usage: fetch_promtool.sh OUT_DIR}
mkdir -p "$out" || { echo "edgelock promtool: cannot make $out" >&2; exit 0; }
out=$(cd "$out" && pwd)

if [ -x "$out/promtool" ] && "$out/promtool" --version >/dev/null 2>&1; then
    echo "edgelock promtool: $("$out/promtool" --version 2>&1 | head -n 1) in $out"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then
    echo "edgelock promtool: not fetched: no apt-get or dpkg here; put a promtool in $out" >&2
    exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/edgelock-promtool.XXXXXX") || {
    echo "edgelock promtool: not fetched: no temporary folder" >&2
    exit 0
}
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/debs" "$work/root" "$work/cache/archives/partial"

# With the machine's lists (read only; the download goes to a cache of ours).
(cd "$work/debs" && apt-get -q -o Dir::Cache="$work/cache" -o Debug::NoLocking=1 \
    -o APT::Sandbox::User="$(id -un)" download prometheus) >"$work/download.log" 2>&1
if ! ls "$work"/debs/prometheus_*.deb >/dev/null 2>&1; then
    # Private lists of the release's main archive.
    codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    if [ -z "$codename" ]; then
        echo "edgelock promtool: not fetched: the machine's lists have no prometheus and the" \
            "Debian release is unknown (/etc/os-release)" >&2
        exit 0
    fi
    mirror=${EDGELOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    apt="$work/apt"
    mkdir -p "$apt/lists/partial"
    echo "deb [signed-by=$keyring] $mirror $codename main" >"$apt/sources.list"
    set -- -q -o Dir::Etc::sourcelist="$apt/sources.list" -o Dir::Etc::sourceparts=/nonexistent \
        -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$work/cache" \
        -o Dir::State::status=/var/lib/dpkg/status -o Debug::NoLocking=1 \
        -o APT::Sandbox::User="$(id -un)"
    if ! apt-get "$@" update >"$work/update.log" 2>&1; then
        echo "edgelock promtool: not fetched: apt-get update of $mirror $codename failed:" \
            "$(tail -n 1 "$work/update.log")" >&2
        exit 0
    fi
    (cd "$work/debs" && apt-get "$@" download prometheus) >"$work/download.log" 2>&1
fi
deb=$(ls "$work"/debs/prometheus_*.deb 2>/dev/null | head -n 1)
if [ -z "$deb" ]; then
    said=""
    if [ -f "$work/update.log" ] && grep -q '^[WE]:' "$work/update.log"; then
        said=" (apt-get update: $(grep '^[WE]:' "$work/update.log" | head -n 1))"
    fi
    echo "edgelock promtool: not fetched: apt-get download prometheus failed:" \
        "$(tail -n 1 "$work/download.log")$said" >&2
    exit 0
fi
if ! dpkg -x "$deb" "$work/root" || [ ! -x "$work/root/usr/bin/promtool" ]; then
    echo "edgelock promtool: not fetched: $(basename "$deb") has no usr/bin/promtool" >&2
    exit 0
fi
cp "$work/root/usr/bin/promtool" "$out/promtool.new" && mv "$out/promtool.new" "$out/promtool" || {
    echo "edgelock promtool: not fetched: cannot write $out/promtool" >&2
    exit 0
}
if ! "$out/promtool" --version >/dev/null 2>&1; then
    echo "edgelock promtool: the promtool fetched does not run here; removed" >&2
    rm -f "$out/promtool"
    exit 0
fi
echo "edgelock promtool: $("$out/promtool" --version 2>&1 | head -n 1) in $out"
