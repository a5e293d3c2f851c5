// edgelock: a flock(1)-style agent for jobs that must not run twice across
// gateways. One poll loop: the Redis connections, the child's exit and
// forwarded signals all arrive as readable fds (signals through a self-pipe
// written by the handlers). The only other thread writes the agent's
// messages (messages.hpp), so that a stuck stderr cannot stop the loop.
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "agent.hpp"
#include "messages.hpp"
#include "service_status.hpp"

#ifndef EDGELOCK_VERSION_STRING
#define EDGELOCK_VERSION_STRING "unknown"
#endif

using namespace edgelock;
using namespace edgelock_cli;

namespace {

// A standard fd started closed is opened on /dev/null: otherwise the first
// socket the agent makes would take its number, and the agent's messages
// (fd 2) would go down a Redis connection, or a job's output.
void fill_standard_fds() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            const int null = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
            if (null >= 0 && null != fd) {
                ::close(null);  // not the lowest free number: leave it be
            }
        }
    }
}

int run_agent() {
    client_lock l;
    const int s = setup(l);
    if (s != exit_ok) {
        return s;
    }
    int status = exit_software;
    switch (opt.cmd) {
    case command::run:
        status = run_command(l);
        break;
    case command::acquire:
        status = acquire_command(l);
        break;
    case command::renew:
        status = renew_command(l);
        break;
    case command::release:
        status = release_command(l);
        break;
    case command::status:
        status = status_command(l);
        break;
    case command::list:
        status = list_command();
        break;
    default:
        break;
    }
    // A Sentinel node may still owe the master it left at a failover the
    // delete of a key this lock kept there, the lock having been found lost
    // (or released) on the new one: the agent does not leave before that is
    // done or given up. The client bounds it (a connect, at most 1 s here,
    // then a stall timeout, 5 s); this bound only guards against a bug.
    driver.settle(port::now() + duration::seconds(8));
    l.detach();
    driver.disconnect();
    save_tls_sessions();
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    fill_standard_fds();
    std::string error;
    if (!parse_command_line(argc, argv, opt, error)) {
        std::fprintf(stderr, "edgelock: %s\n", error.c_str());
        return exit_usage;
    }
    if (opt.cmd == command::help) {
        std::fputs(usage_text(), stdout);
        return exit_ok;
    }
    if (opt.cmd == command::version) {
        std::printf("edgelock %s\n", EDGELOCK_VERSION_STRING);
        return exit_ok;
    }
    if (opt.cmd == command::config) {
        return config_command(opt);
    }
    start_messages(opt.verbosity);
    open_service_status();
    const int status = run_agent();
    finish_messages();
    return status;
}
