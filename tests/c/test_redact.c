/* edgelock_redact_nodes(): a URL or a node list with its passwords masked or
 * its credentials removed, whatever the password holds; the buffer's rules
 * (the whole text and its NUL, or only a NUL). Needs no server. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "capi_test.h"

int case_redact(void) {
    static const struct {
        const char* nodes;
        const char* masked;
        const char* removed;
    } rows[] = {
        {"redis://app:s3cr,etPW@10.0.0.7:6380/2", "redis://app:****@10.0.0.7:6380/2",
         "redis://10.0.0.7:6380/2"},
        {"rediss://:a%40b:c,d%2F%25@h", "rediss://:****@h", "rediss://h"},
        {"redis-sentinel://app:p,w@s1,s2:26380/mymaster,redis-cluster://:x,y@h1:7000,h2",
         "redis-sentinel://app:****@s1,s2:26380/mymaster,redis-cluster://:****@h1:7000,h2",
         "redis-sentinel://s1,s2:26380/mymaster,redis-cluster://h1:7000,h2"},
        {"unix:///run/r@dis.sock?db=1", "unix:///run/r@dis.sock?db=1",
         "unix:///run/r@dis.sock?db=1"},
        {"redis://app:p@ss,word@h", "redis://****@h", "redis://h"}, /* refused: a raw '@' */
        {"redis://h", "redis://h", "redis://h"},
        {"", "", ""},
    };
    char buf[256];
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
        const size_t masked = strlen(rows[i].masked);
        const size_t removed = strlen(rows[i].removed);
        CHECK_INT(edgelock_redact_nodes(rows[i].nodes, 0, buf, sizeof buf), ==, masked);
        CHECK(strcmp(buf, rows[i].masked) == 0);
        CHECK_INT(edgelock_redact_nodes(rows[i].nodes, 1, buf, sizeof buf), ==, removed);
        CHECK(strcmp(buf, rows[i].removed) == 0);
        /* The length alone, and a buffer one byte short: only a NUL. */
        CHECK_INT(edgelock_redact_nodes(rows[i].nodes, 0, NULL, 0), ==, masked);
        memset(buf, '#', sizeof buf);
        CHECK_INT(edgelock_redact_nodes(rows[i].nodes, 0, buf, masked), ==, masked);
        if (masked > 0) {
            CHECK(buf[0] == '\0');
            CHECK(buf[1] == '#');
        }
        /* Exactly enough. */
        memset(buf, '#', sizeof buf);
        CHECK_INT(edgelock_redact_nodes(rows[i].nodes, 0, buf, masked + 1), ==, masked);
        CHECK(strcmp(buf, rows[i].masked) == 0);
        CHECK(buf[masked + 1] == '#');
    }
    CHECK_INT(edgelock_redact_nodes(NULL, 0, buf, sizeof buf), ==, 0);
    CHECK(buf[0] == '\0');
    return 0;
}
