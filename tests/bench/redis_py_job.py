"""redis-py's Lock (Debian's python3-redis) running one job, as a naive fleet
client would: bench_lossy_link's peer.

  redis_py_job.py HOST PORT NAME TTL_MS MARK SECONDS

One try (no waiting for a holder): on success, "go" is written to the file
MARK (a FIFO the benchmark watches: the job's start), the job sleeps SECONDS,
then the lock is released. Prints "released", "expired" (the lock ended
before the release: redis-py does not renew), "refused" or "error TEXT".
Exit 0 for the first two, 1 otherwise, 2 on a usage error. The client's
socket timeout is 10 s, so that a run on a dead link ends.
"""
import sys
import time

import redis
from redis.exceptions import LockNotOwnedError


def main(argv):
    if len(argv) != 7:
        print("usage: redis_py_job.py HOST PORT NAME TTL_MS MARK SECONDS", file=sys.stderr)
        return 2
    host, port, name = argv[1], int(argv[2]), argv[3]
    ttl_s, mark, seconds = int(argv[4]) / 1000.0, argv[5], float(argv[6])
    try:
        r = redis.Redis(host=host, port=port, socket_timeout=10, socket_connect_timeout=10)
        lock = r.lock(name, timeout=ttl_s, thread_local=False)
        if not lock.acquire(blocking=False):
            print("refused")
            return 1
        with open(mark, "w") as f:
            f.write("go\n")
        time.sleep(seconds)
        try:
            lock.release()
            print("released")
        except LockNotOwnedError:
            print("expired")
        return 0
    except redis.RedisError as e:
        print("error " + type(e).__name__ + ": " + str(e))
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
