#!/bin/sh
# The nightly upload of a fleet of gateways: every gateway runs it, one uploads.
#
# Each gateway has edgelock-job.timer, which starts edgelock-job.service at
# 02:00 plus a random delay of up to 10 minutes. The service runs
#
#   edgelock run --nodes "$EDGELOCK_NODES" --ttl 2m --fencing nightly-upload \
#       -- /usr/local/bin/nightly-upload.sh
#
# and a night goes like this:
#
#   gw-a 02:03  acquires nightly-upload, fencing token 41; runs this script,
#               which uploads tonight's object with X-Fencing-Token: 41
#   gw-b 02:04  'nightly-upload' is held by another owner: edgelock exits 1
#               without running anything (the unit counts 1 as success)
#   gw-c 02:09  gw-a is done and released the lock, so gw-c gets token 42 and
#               runs the script; the storage already has tonight's object and
#               answers 412 to its create-only PUT: nothing to do, exit 0
#
# The lock keeps two gateways from uploading at once; it cannot tell whether
# tonight's upload has already happened. That is why the object is named after
# the date and created with If-None-Match: * (the storage refuses a second
# one), and why the fencing token goes with it: a gateway that stalled (swap,
# a frozen VM, a cut uplink) may still be sending after its lock expired and
# someone else took over. The storage remembers the highest token it saw for
# the key and rejects any request with a lower one (here: 409), so a stale
# holder cannot overwrite what the current one wrote.
#
# Environment (from edgelock run --fencing):
#   EDGELOCK_KEY            the lock's name (nightly-upload)
#   EDGELOCK_FENCING_TOKEN  this acquisition's fencing token, a decimal
# Environment (yours, e.g. in /etc/default/edgelock):
#   UPLOAD_URL   base URL of the storage; unset: only say what would happen
#   UPLOAD_FILE  the file to upload; default: a small report made here
#
# Try it locally:
#   EDGELOCK_KEY=nightly-upload EDGELOCK_FENCING_TOKEN=7 ./nightly-upload.sh
#
# Exit status: 0 uploaded (or already uploaded tonight), 3 failed, 4 the
# storage rejected our fencing token as stale, 143 stopped by SIGTERM. Never
# 1: to the unit, 1 means "another gateway holds the lock" (not a failure).
set -eu

# A command failing under set -e may exit 1; report it as 3 instead.
trap 'rc=$?; [ "$rc" -ne 1 ] || exit 3' EXIT

say() { printf 'nightly-upload: %s\n' "$*"; }
fail() {
    printf 'nightly-upload: error: %s\n' "$*" >&2
    exit 3
}

key=${EDGELOCK_KEY:-}
fence=${EDGELOCK_FENCING_TOKEN:-}
[ -n "$key" ] || fail "EDGELOCK_KEY is not set: run me under 'edgelock run --fencing KEY -- $0'"
case $fence in
'' | *[!0-9]*) fail "EDGELOCK_FENCING_TOKEN is not a number ('$fence'): is --fencing missing?" ;;
esac

# A SIGTERM (systemd stopping the unit, forwarded by edgelock, or edgelock
# itself when the lock is lost) must stop the upload too, not just this shell:
# commands run in the background and the trap passes the signal on.
child=
on_signal() {
    [ -z "$child" ] || kill -TERM "$child" 2>/dev/null || :
    say "stopped by a signal"
    exit 143
}
trap on_signal TERM INT HUP
run() {
    "$@" &
    child=$!
    rc=0
    wait "$child" || rc=$?
    child=
    return "$rc"
}

# StateDirectory= of the unit, else somewhere writable for a local try.
state=${STATE_DIRECTORY:-${TMPDIR:-/tmp}/nightly-upload}
mkdir -p "$state"
# The night's date, local time: 02:00 is safely inside the day (keep the
# gateways of a fleet on one time zone so that they agree on it).
day=$(date +%Y-%m-%d)

payload=${UPLOAD_FILE:-}
if [ -z "$payload" ]; then
    # Stand-in for the real export: replace with what your gateways collect.
    payload=$state/report-$day.txt
    {
        echo "report of $day"
        echo "made by $(uname -n) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    } >"$payload"
fi
[ -r "$payload" ] || fail "cannot read $payload"

# The token also goes next to the data, for consumers that pick files up
# rather than receive them (a share, rsync): they keep the highest token seen
# per key and ignore data that comes with a lower one.
printf 'key=%s\nfencing_token=%s\nhost=%s\n' "$key" "$fence" "$(uname -n)" >"$payload.fence"

object=$key-$day
if [ -z "${UPLOAD_URL:-}" ]; then
    say "UPLOAD_URL is not set: simulating"
    say "would PUT $payload ($(wc -c <"$payload" | tr -d ' ') bytes) as $object"
    say "  with X-Fencing-Token: $fence and If-None-Match: *"
    say "wrote $payload.fence"
    run sleep 2
    say "done (simulated)"
    exit 0
fi

url=${UPLOAD_URL%/}/$object
say "uploading $payload to $url (fencing token $fence)"
response=$state/response
if ! run curl --silent --show-error --max-time 600 --retry 2 \
    --output "$response" --write-out '%{http_code}' \
    --upload-file "$payload" \
    --header "X-Fencing-Token: $fence" \
    --header "X-Lock-Key: $key" \
    --header "If-None-Match: *" \
    "$url" >"$state/status"; then
    fail "curl could not upload to $url"
fi
status=$(cat "$state/status")
case $status in
2??)
    say "uploaded $object (HTTP $status)"
    ;;
412)
    say "$object is already there: another gateway uploaded it tonight"
    ;;
409)
    printf 'nightly-upload: error: %s\n' \
        "the storage rejected fencing token $fence as stale: a newer holder has written" >&2
    exit 4
    ;;
*)
    fail "upload of $object failed with HTTP $status: $(head -n 3 "$response")"
    ;;
esac
