#!/bin/sh
# Fetches Valkey (valkey-server, valkey-cli) for the tests into DEST, without
# touching the machine's package sources: Debian 12 ships Valkey 8 in
# bookworm-backports, which a machine's sources rarely list. A private
# sources list and package lists under DEST/apt let `apt-get download` fetch
# the two packages; `dpkg -x` unpacks them into DEST/root. Their libraries
# are redis-server's (make deps installs it). DEST/bin then holds
# redis-server and redis-cli links to Valkey's, so a test run with DEST/bin
# first in PATH starts Valkey wherever it starts Redis.
#   sh tests/tools/fetch_valkey.sh build/valkey
set -eu

dest=${1:?usage: fetch_valkey.sh DEST}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

if [ -x "$dest/bin/redis-server" ] && "$dest/bin/redis-server" --version 2>/dev/null | grep -q '^Valkey server v=8\.'; then
    echo "edgelock deps: $("$dest/bin/redis-server" --version | cut -d' ' -f1-3) in $dest"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then
    echo "edgelock deps: no apt-get here; put Valkey 8's valkey-server and valkey-cli in $dest/root/usr/bin" >&2
    exit 1
fi

codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
case "$codename" in
    bookworm) suite=bookworm-backports ;;
    "") echo "edgelock deps: cannot tell the Debian release (/etc/os-release)" >&2; exit 1 ;;
    *) suite=$codename ;;  # later releases carry Valkey in main
esac
mirror=${EDGELOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

apt="$dest/apt"
rm -rf "$apt" "$dest/root" "$dest/bin"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$dest/root" "$dest/bin"
echo "deb [signed-by=$keyring] $mirror $suite main" > "$apt/sources.list"
# Nothing of the machine's apt state is read or written: its sources, lists,
# cache and lock stay as they were.
set -- -q -o Dir::Etc::sourcelist="$apt/sources.list" -o Dir::Etc::sourceparts=/nonexistent \
    -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" \
    -o Dir::State::status=/var/lib/dpkg/status -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)"

echo "edgelock deps: fetching Valkey from $suite (private package lists in $apt)"
apt-get "$@" update >"$apt/update.log" 2>&1 || { cat "$apt/update.log" >&2; exit 1; }
(cd "$apt/debs" && apt-get "$@" download valkey-server valkey-tools) >"$apt/download.log" 2>&1 ||
    { cat "$apt/download.log" >&2; exit 1; }
for deb in "$apt"/debs/*.deb; do
    dpkg -x "$deb" "$dest/root"
done
ln -s ../root/usr/bin/valkey-server "$dest/bin/redis-server"
ln -s ../root/usr/bin/valkey-cli "$dest/bin/redis-cli"
if ! "$dest/bin/redis-server" --version | grep -q '^Valkey server v=8\.'; then
    echo "edgelock deps: the Valkey fetched does not run or is not Valkey 8:" >&2
    "$dest/bin/redis-server" --version >&2 || true
    exit 1
fi
echo "edgelock deps: $("$dest/bin/redis-server" --version | cut -d' ' -f1-3) in $dest"
