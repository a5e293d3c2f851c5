/* A C program that uses edgelock the way a C consumer would: the C header,
 * the library and the POSIX port linked by the C compiler through pkg-config
 * (check_package.sh). No server: a client and a lock made in static storage,
 * a bad URL refused with its reason. */
#include <edgelock/edgelock.h>

#include <stdio.h>
#include <string.h>

static edgelock_align client_mem[EDGELOCK_CLIENT_WORDS(1, 0)];
static edgelock_align lock_mem[EDGELOCK_LOCK_WORDS];

int main(void) {
    const char* good[] = {"redis://127.0.0.1:6379"};
    const char* bad[] = {"http://127.0.0.1"};
    const char* why = "";
    edgelock_client* c = NULL;
    edgelock_lock* l = NULL;
    int ok =
        edgelock_client_size(1, 0) <= sizeof client_mem && edgelock_lock_size() <= sizeof lock_mem;
    ok = ok && edgelock_client_init(client_mem, sizeof client_mem, 1, 0, bad, 1, NULL, &c) ==
                   EDGELOCK_ERR_URL;
    ok = ok && edgelock_client_bad_url(c, &why) == 0 && strlen(why) > 0;
    edgelock_client_deinit(c);
    ok = ok && edgelock_client_init(client_mem, sizeof client_mem, 1, 0, good, 1, NULL, &c) ==
                   EDGELOCK_OK;
    ok = ok && edgelock_lock_init(lock_mem, sizeof lock_mem, c, "job", NULL, &l) == EDGELOCK_OK;
    ok = ok && !edgelock_lock_held(l) && edgelock_now_us() > 0;
    ok = ok && edgelock_lock_release(l) == EDGELOCK_ERR_NOT_HELD;
    edgelock_lock_deinit(l);
    edgelock_client_deinit(c);
    puts(ok ? "c consumer: ok" : "c consumer: FAILED");
    return ok ? 0 : 1;
}
