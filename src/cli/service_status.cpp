// systemd's status line, written as sd_notify(3) does: one datagram per
// state, to the unix socket $NOTIFY_SOCKET names.
#include "service_status.hpp"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

namespace edgelock_cli {

namespace {

int status_fd = -1;
sockaddr_un status_to;
socklen_t status_to_size = 0;
char last_sent[256];  // the last datagram, not sent twice in a row
size_t last_size = 0;
char holding[208];  // "STATUS=" and what service_status_holding_is() said
size_t holding_size = 0;

// "STATUS=" and the text into line (208 bytes); its size, 0 on a format error.
size_t format_line(char* line, const char* format, va_list args) {
    static const char head[] = "STATUS=";
    constexpr size_t room = 201;  // 200 bytes of text and vsnprintf's NUL
    memcpy(line, head, sizeof head - 1);
    const int n = vsnprintf(line + sizeof head - 1, room, format, args);
    if (n < 0) {
        return 0;
    }
    const size_t size =
        sizeof head - 1 + (static_cast<size_t>(n) < room ? static_cast<size_t>(n) : room - 1);
    // The text holds keys and holder records read from Redis: a newline in
    // one would start an assignment of its own (READY=1, MAINPID=...).
    for (size_t i = sizeof head - 1; i < size; ++i) {
        const unsigned char c = static_cast<unsigned char>(line[i]);
        if (c < 0x20 || c == 0x7f) {
            line[i] = '?';
        }
    }
    return size;
}

void send_line(const char* line, size_t size) {
    if (status_fd < 0 || size == 0 || (size == last_size && memcmp(line, last_sent, size) == 0)) {
        return;
    }
    // Non-blocking both ways: a full queue (a stuck manager) drops it.
    const ssize_t sent = sendto(status_fd, line, size, MSG_DONTWAIT | MSG_NOSIGNAL,
                                reinterpret_cast<const sockaddr*>(&status_to), status_to_size);
    if (sent == static_cast<ssize_t>(size)) {
        memcpy(last_sent, line, size);
        last_size = size;
    }
}

}  // namespace

bool service_status_wanted() {
    return status_fd >= 0;
}

void open_service_status() {
    const char* path = getenv("NOTIFY_SOCKET");
    if (path == nullptr || (path[0] != '/' && path[0] != '@')) {
        return;
    }
    const size_t size = strlen(path);
    if (size < 2 || size >= sizeof status_to.sun_path) {
        return;
    }
    memset(&status_to, 0, sizeof status_to);
    status_to.sun_family = AF_UNIX;
    memcpy(status_to.sun_path, path, size);
    if (path[0] == '@') {
        status_to.sun_path[0] = '\0';  // abstract: the name is the bytes after it
    }
    status_to_size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + size);
    status_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
}

void service_status(const char* format, ...) {
    if (status_fd < 0) {
        return;
    }
    char line[208];
    va_list args;
    va_start(args, format);
    const size_t size = format_line(line, format, args);
    va_end(args);
    send_line(line, size);
}

void service_status_holding_is(const char* format, ...) {
    if (status_fd < 0) {
        return;
    }
    va_list args;
    va_start(args, format);
    holding_size = format_line(holding, format, args);
    va_end(args);
    send_line(holding, holding_size);
}

void service_status_holding() {
    send_line(holding, holding_size);
}

}  // namespace edgelock_cli
