#!/bin/sh
# make demo: several edgelock agents take turns at one job on three local
# redis-server nodes, then a lock is lost under a paused majority and its job
# is stopped. Starts its own servers on free loopback ports and stops them
# (and everything else it started) on the way out, whatever happens.
#
#   sh examples/demo.sh path/to/edgelock
set -eu

EDGELOCK=${1:?usage: demo.sh path/to/edgelock}
AGENTS=${DEMO_AGENTS:-4}
# The demo's agents use only the servers it starts: no configuration file of
# the machine's (/etc/edgelock.conf) joins in.
export EDGELOCK_CONFIG=none
WORK=$(mktemp -d "${TMPDIR:-/tmp}/edgelock-demo.XXXXXX")
PIDS=""

cleanup() {
    for p in $PIDS; do
        kill -CONT "$p" 2>/dev/null || true
        kill -KILL "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }

# A free port: ask the kernel for one through a throwaway listener when a
# Python is around; else probe a random range. redis-server refuses a port in
# use, and start_node then tries another.
pick_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
    else
        echo $((20000 + ($(od -An -N2 -tu2 /dev/urandom) % 30000)))
    fi
}

start_node() {
    i=$1
    tries=0
    while [ $tries -lt 20 ]; do
        tries=$((tries + 1))
        port=$(pick_port)
        mkdir -p "$WORK/node$i"
        redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
            --dir "$WORK/node$i" --logfile "$WORK/node$i/log" >/dev/null 2>&1 &
        pid=$!
        n=0
        while [ $n -lt 50 ]; do
            if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
                PIDS="$PIDS $pid"
                eval "PORT$i=$port PID$i=$pid"
                return 0
            fi
            if ! kill -0 "$pid" 2>/dev/null; then
                break
            fi
            sleep 0.1
            n=$((n + 1))
        done
        kill -KILL "$pid" 2>/dev/null || true
    done
    echo "demo: could not start redis-server" >&2
    exit 1
}

echo "== edgelock demo"
for i in 1 2 3; do start_node $i; done
NODES="redis://127.0.0.1:$PORT1,redis://127.0.0.1:$PORT2,redis://127.0.0.1:$PORT3"
echo "three redis-server nodes on 127.0.0.1:$PORT1, :$PORT2, :$PORT3 (Redlock: 2 of 3 needed)"
echo

# --- 1. agents contending for one job ------------------------------------------------
echo "== $AGENTS agents start at once; each wants to run 'nightly-job' for 1 s"
echo "   edgelock run --nodes ... --fencing --wait 20s --ttl 3s nightly-job -- JOB"
T0=$(now)
: >"$WORK/timeline"
i=1
while [ $i -le "$AGENTS" ]; do
    "$EDGELOCK" run --nodes "$NODES" --fencing --wait 20s --ttl 3s nightly-job -- \
        sh -c 'echo "$(date +%s.%N) start $0 $EDGELOCK_FENCING_TOKEN" >>"$1"; sleep 1;
               echo "$(date +%s.%N) end $0 $EDGELOCK_FENCING_TOKEN" >>"$1"' \
        "agent-$i" "$WORK/timeline" &
    PIDS="$PIDS $!"
    eval "AGENT$i=$!"
    i=$((i + 1))
done
status=0
i=1
while [ $i -le "$AGENTS" ]; do
    eval "p=\$AGENT$i"
    wait "$p" || status=$?
    i=$((i + 1))
done

sort -n "$WORK/timeline" | awk -v t0="$T0" '
    { t = $1 - t0 }
    $2 == "start" { printf "  +%5.2fs  %-8s holds the lock (fencing token %s)\n", t, $3, $4
                    if (holder != "") overlap = 1
                    holder = $3
                    if ($4 + 0 <= last + 0) backwards = 1
                    last = $4; runs++ }
    $2 == "end"   { printf "  +%5.2fs  %-8s done, released\n", t, $3; holder = "" }
    END {
        print ""
        if (overlap) print "  CHECK FAILED: two agents held the lock at once"
        else printf "  %d runs, never two at once; fencing tokens strictly increasing: %s\n",
                    runs, backwards ? "NO" : "yes"
        exit (overlap || backwards) ? 1 : 0
    }'
[ "$status" -eq 0 ] || { echo "demo: an agent exited with $status" >&2; exit 1; }
echo

# --- 2. a lost lock stops its job ----------------------------------------------------
echo "== a lost lock: an agent holds 'sensor-sync' (ttl 2s, renewed every ~0.7s);"
echo "   then two of the three nodes freeze (SIGSTOP), so no renewal can win a quorum"
T0=$(now)
"$EDGELOCK" run --nodes "$NODES" --ttl 2s --grace 1s --verbose sensor-sync -- \
    sh -c 'trap "echo \"job: SIGTERM received, stopping\"; exit 143" TERM
           echo "job: started"; while :; do sleep 0.1; done' \
    >"$WORK/lost.out" 2>&1 &
AGENT=$!
PIDS="$PIDS $AGENT"
sleep 1
echo "  +$(awk -v a="$(now)" -v b="$T0" 'BEGIN { printf "%.2f", a - b }')s  freezing nodes :$PORT2 and :$PORT3"
kill -STOP "$PID2" "$PID3"
status=0
wait "$AGENT" || status=$?
kill -CONT "$PID2" "$PID3"
sed 's/^/    /' "$WORK/lost.out"
echo "  +$(awk -v a="$(now)" -v b="$T0" 'BEGIN { printf "%.2f", a - b }')s  edgelock exited with $status (75: the lock could not be kept, the job was stopped in time)"
[ "$status" -eq 75 ] || { echo "demo: expected exit status 75" >&2; exit 1; }
echo
echo "== done; servers stopped"
