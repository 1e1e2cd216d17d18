/* quorum_floor: what N members cost any client on this machine, with no rlock in it.
 * Connects to every port given (127.0.0.1, non-blocking, all at once), sends each a PING
 * once all are connected, exits once NEED have answered, and resets the connections as
 * rlock does (SO_LINGER 0). bench/quorum.sh times it on one server and on the 5 members
 * next to `rlock lock`: the difference between its two rows is what the members' accepts,
 * wake-ups and scheduling add before rlock does anything of its own.
 * With -r FILE it sends FILE (RESP requests: rlock's own, as bench/quorum.sh captures
 * them) instead of the PING, and a member has answered once it has replied to each: what
 * the members' scripts add, without rlock's process around them.
 * Usage: quorum_floor [-r FILE] NEED PORT...   (exit 0: NEED answered; 1: a failure) */
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

enum { MAX_MEMBERS = 9, PATIENCE_MS = 2000, MAX_BYTES = 1 << 16 };

/* Where the RESP value that starts at b[at] ends (the index after it), or -1 when b[0..len)
 * does not hold all of it yet. */
static long resp_end(const char *b, long len, long at) {
    if (at >= len) return -1;
    const char *nl = memchr(b + at, '\n', (size_t)(len - at));
    if (!nl) return -1;
    long next = nl - b + 1, n = atol(b + at + 1);
    switch (b[at]) {
    case '$':
        return n < 0 ? next : next + n + 2 <= len ? next + n + 2 : -1;
    case '*':
        for (long i = 0; i < n && next >= 0; i++) next = resp_end(b, len, next);
        return next;
    default: /* + - : and the one-line types */
        return next;
    }
}

/* How many whole RESP values b[0..len) holds. */
static int resp_count(const char *b, long len) {
    int n = 0;
    for (long at = 0; at < len && (at = resp_end(b, len, at)) > 0;) n++;
    return n;
}

static int fail(const char *what) {
    fprintf(stderr, "quorum_floor: %s: %s\n", what, strerror(errno));
    return 1;
}

int main(int argc, char **argv) {
    static char request[MAX_BYTES] = "*1\r\n$4\r\nPING\r\n";
    static char replies[MAX_MEMBERS][MAX_BYTES];
    long request_len = (long)strlen(request), got[MAX_MEMBERS] = {0};
    if (argc > 2 && strcmp(argv[1], "-r") == 0) {
        FILE *f = fopen(argv[2], "rb");
        if (!f) return fail(argv[2]);
        request_len = (long)fread(request, 1, sizeof request, f);
        fclose(f);
        argc -= 2;
        argv += 2;
    }
    int expected = resp_count(request, request_len);
    int n = argc - 2, need = argc > 1 ? atoi(argv[1]) : 0;
    if (n < 1 || n > MAX_MEMBERS || need < 1 || need > n || expected < 1) {
        fprintf(stderr, "usage: quorum_floor [-r FILE] NEED PORT... (1 to %d ports)\n",
                MAX_MEMBERS);
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
    for (int i = 0; i < n; i++) {
        if (send(p[i].fd, request, (size_t)request_len, MSG_NOSIGNAL) != (ssize_t)request_len)
            return fail("send");
        p[i].events = POLLIN;
    }
    for (int answered = 0; answered < need;) {
        if (poll(p, n, PATIENCE_MS) <= 0) return fail("reply (poll)");
        for (int i = 0; i < n; i++) {
            if (!(p[i].revents & POLLIN)) continue;
            ssize_t r = recv(p[i].fd, replies[i] + got[i], (size_t)(MAX_BYTES - got[i]), 0);
            if (r <= 0) return fail("recv");
            got[i] += r;
            if (resp_count(replies[i], got[i]) < expected) continue;
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
