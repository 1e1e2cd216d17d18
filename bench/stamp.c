/* stamp: print CLOCK_REALTIME in nanoseconds since the epoch, one line.
 * Used by bench/run.sh to time lock hand-offs between processes:
 * the releasing holder's child ends with `stamp > end`, the waiter's child is
 * `stamp > start`, and start - end is the hand-off latency.
 * Built static (-O2 -static) so its own start-up cost is tiny and constant. */
#include <stdio.h>
#include <time.h>

int main(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
        perror("stamp: clock_gettime");
        return 1;
    }
    if (printf("%lld\n", (long long)ts.tv_sec * 1000000000LL + (long long)ts.tv_nsec) < 0)
        return 1;
    return fflush(stdout) == 0 ? 0 : 1;
}
