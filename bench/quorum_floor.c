/* quorum_floor: what N members cost any client on this machine, with no rlock in it.
 * Connects to every port given (127.0.0.1, non-blocking, all at once), sends each a PING
 * once all are connected, exits once NEED have answered, and resets the connections as
 * rlock does (SO_LINGER 0). bench/quorum.sh times it on one server and on the 5 members
 * next to `rlock lock`: the difference between its two rows is what the members' accepts,
 * wake-ups and scheduling add before rlock does anything of its own.
 * Usage: quorum_floor NEED PORT...   (exit 0: NEED answered; 1: a failure, on stderr) */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { MAX_MEMBERS = 9, PATIENCE_MS = 2000 };

static int fail(const char *what) {
    fprintf(stderr, "quorum_floor: %s: %s\n", what, strerror(errno));
    return 1;
}

int main(int argc, char **argv) {
    int n = argc - 2, need = argc > 1 ? atoi(argv[1]) : 0;
    if (n < 1 || n > MAX_MEMBERS || need < 1 || need > n) {
        fprintf(stderr, "usage: quorum_floor NEED PORT... (1 to %d ports)\n", MAX_MEMBERS);
        return 1;
    }
    struct pollfd p[MAX_MEMBERS];
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
        if (fd < 0) return fail("socket");
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[i + 2]))};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS)
            return fail("connect");
        p[i] = (struct pollfd){.fd = fd, .events = POLLOUT};
    }
    for (int open = 0; open < n;) {
        if (poll(p, n, PATIENCE_MS) <= 0) return fail("connect (poll)");
        for (int i = 0; i < n; i++) {
            if (!p[i].revents) continue;
            if (p[i].revents & (POLLERR | POLLHUP)) return fail("connect (refused?)");
            p[i].events = 0;
            open++;
        }
    }
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    for (int i = 0; i < n; i++) {
        if (send(p[i].fd, ping, sizeof ping - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof ping - 1))
            return fail("send");
        p[i].events = POLLIN;
    }
    for (int answered = 0; answered < need;) {
        if (poll(p, n, PATIENCE_MS) <= 0) return fail("reply (poll)");
        for (int i = 0; i < n; i++) {
            char reply[64];
            if (!(p[i].revents & POLLIN)) continue;
            if (recv(p[i].fd, reply, sizeof reply, 0) <= 0) return fail("recv");
            p[i].events = 0;
            answered++;
        }
    }
    struct linger reset = {1, 0};
    for (int i = 0; i < n; i++) {
        /* An unanswered member keeps the orderly close, as in rlock. */
        if (p[i].events == 0) setsockopt(p[i].fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        close(p[i].fd);
    }
    return 0;
}
