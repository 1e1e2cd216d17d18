#!/usr/bin/env python3
"""Wall time of a few commands run in turns, one process per run, so that a drift of the
machine's speed hits every command alike (hyperfine runs one command's batch after
another). Prints min, p10 and median in ms per command.

  python3 bench/interleaved.py RUNS 'CMD ARGS...' 'CMD ARGS...' ...

Each command is split on spaces (no shell) and its stdout goes to /dev/null; the first 20
rounds are a warm-up and not counted. The README's build-cost figures came from
  python3 bench/interleaved.py 300 'OLD --url redis://127.0.0.1:PORT exec e1 -- /bin/true' \\
      'NEW --url redis://127.0.0.1:PORT exec e2 -- /bin/true' ...
against a throwaway redis-server.
"""
import os
import statistics
import sys
import time

WARMUP = 20


def main():
    runs = int(sys.argv[1])
    cmds = [c.split() for c in sys.argv[2:]]
    times = [[] for _ in cmds]
    devnull = os.open(os.devnull, os.O_WRONLY)
    for i in range(runs + WARMUP):
        for j, argv in enumerate(cmds):
            start = time.perf_counter()
            pid = os.posix_spawn(argv[0], argv, os.environ,
                                 file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
            os.waitpid(pid, 0)
            if i >= WARMUP:
                times[j].append(time.perf_counter() - start)
    for argv, t in zip(cmds, times):
        t.sort()
        print('%-70s min %.2f p10 %.2f median %.2f' %
              (' '.join(argv)[:70], t[0] * 1e3, t[len(t) // 10] * 1e3,
               statistics.median(t) * 1e3))


if __name__ == '__main__':
    main()
