"""redis-py's Lock (Debian's python3-redis) as a peer of edgelock's tests.

Another Redis lock client of a fleet, driven one operation per run:

  redis_py_lock.py PORT NAME acquire TTL_MS   -> "acquired TOKEN" | "refused"
  redis_py_lock.py PORT NAME release TOKEN    -> "released" | "not-owned"
  redis_py_lock.py PORT NAME holder           -> "held" | "free" (its own view)

A held lock stays held after the run (until its ttl or a release naming its
token). Exit 0 on any of those answers, 2 on a usage error, 1 on anything else.
"""
import sys

import redis
from redis.exceptions import LockNotOwnedError


def main(argv):
    if len(argv) < 4:
        print("usage: redis_py_lock.py PORT NAME acquire TTL_MS | release TOKEN | holder",
              file=sys.stderr)
        return 2
    port, name, op = int(argv[1]), argv[2], argv[3]
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
    if op == "acquire" and len(argv) == 5:
        lock = r.lock(name, timeout=int(argv[4]) / 1000.0, thread_local=False)
        if lock.acquire(blocking=False):
            print("acquired " + lock.local.token.decode())
        else:
            print("refused")
        return 0
    if op == "release" and len(argv) == 5:
        lock = r.lock(name, thread_local=False)
        try:
            lock.do_release(argv[4])
            print("released")
        except LockNotOwnedError:
            print("not-owned")
        return 0
    if op == "holder" and len(argv) == 4:
        print("held" if r.lock(name).locked() else "free")
        return 0
    print("redis_py_lock.py: unknown operation " + " ".join(argv[3:]), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
