# fish completion for rlock(1). Installed into $datadir/fish/vendor_completions.d.

set -l __rlock_subcommands lock unlock exec sem inspect latch limit delay-push delay-pop doctor help

# True once `rlock exec ... --` (or limit's, or delay-pop's) has been typed: the rest is a
# command of its own.
function __rlock_exec_after_dashdash
    set -l tokens (commandline -opc)
    begin
        contains -- exec $tokens; or contains -- limit $tokens; or contains -- delay-pop $tokens
    end; and contains -- -- $tokens
end

# Completes the command after `rlock exec ... --` as if typed on its own.
function __rlock_exec_command
    set -l tokens (commandline -opc)
    set -l i (contains -i -- -- $tokens)
    set -l line (string join ' ' -- $tokens[(math $i + 1)..-1] (commandline -ct))
    if test -z "$line"
        # Nothing typed yet: every command. (__fish_complete_subcommand would
        # fall back to parsing the whole rlock command line.)
        complete -C ''
    else
        __fish_complete_subcommand --commandline $line
    end
end

# The words typed so far that are not options nor an option's value (rlock included).
function __rlock_positionals
    set -l tokens (commandline -opc)
    set -l skip 0
    for t in $tokens
        if test $skip -eq 1
            set skip 0
            continue
        end
        switch $t
            case --url --password-file --prefix --connect-timeout --timeout --sync-replicas --sync-timeout \
                --layout --tls-ca-cert --tls-ca-dir --tls-cert --tls-key --format --owner --lease \
                -w --wait -E --conflict-exit-code --on-lost --kill-after --min-hold --permits --count --permit --type \
                --delay --at --id --max-payload --visibility --max-deliveries
                set skip 1
            case '-*'
            case '*'
                echo $t
        end
    end
end

# True right after `rlock help`, before its one argument.
function __rlock_help_wants_subcommand
    set -l words (__rlock_positionals)
    test (count $words) -eq 2; and test "$words[2]" = help
end

# Lock names held now, from `rlock inspect` with the --url/--password-file/--prefix typed
# so far: quiet, at most about a second, nothing at all on failure.
function __rlock_lock_names
    set -l tokens (commandline -opc)
    set -l globals
    for i in (seq 2 (count $tokens))
        switch $tokens[$i]
            case --url --password-file --prefix --tls-ca-cert --tls-ca-dir --tls-cert --tls-key
                set -a globals $tokens[$i] $tokens[(math $i + 1)]
            case '--url=*' '--password-file=*' '--prefix=*' '--tls-*=*' --tls-insecure
                set -a globals $tokens[$i]
        end
    end
    timeout 2 rlock $globals --connect-timeout 300ms --timeout 500ms inspect --type lock 2>/dev/null |
        string match -ar '"name":"[^"\\\\]*"' | string replace -r '^"name":"(.*)"$' '$1'
end

# True after `rlock inspect` until its one positional is typed, and after `rlock unlock`
# (NAME...: any number of lock names).
function __rlock_wants_lock_name
    set -l words (__rlock_positionals)
    test "$words[2]" = unlock; and return 0
    test (count $words) -eq 2; and test "$words[2]" = inspect
end

# No file names unless an option asks for them.
complete -c rlock -f

# Subcommands.
set -l no_subcmd "not __fish_seen_subcommand_from $__rlock_subcommands"
complete -c rlock -n $no_subcmd -a lock -d 'Take a lock (or several as one) and keep it for its lease'
complete -c rlock -n $no_subcmd -a unlock -d 'Release a lock (or several) taken with lock'
complete -c rlock -n $no_subcmd -a exec -d 'Run a command while holding a lock (or several: all)'
complete -c rlock -n $no_subcmd -a sem -d 'Semaphores: take, release, renew permits; run a command'
complete -c rlock -n $no_subcmd -a inspect -d 'List locks, semaphores, latches, queues'
complete -c rlock -n $no_subcmd -a latch -d 'Countdown latches: set, count-down, await, status'
complete -c rlock -n $no_subcmd -a limit -d 'Rate limiters: decide one call, or run a command when allowed'
complete -c rlock -n $no_subcmd -a delay-push -d 'Schedule an item on a delayed queue'
complete -c rlock -n $no_subcmd -a delay-pop -d 'Take due items of a delayed queue; with -- CMD, reliably'
complete -c rlock -n $no_subcmd -a doctor -d 'Check whether the Redis deployment is fit for locks'
complete -c rlock -n $no_subcmd -a help -d 'Show help for a subcommand'
complete -c rlock -n __rlock_help_wants_subcommand -a "$__rlock_subcommands"
# `rlock help sem exec`, `rlock help latch await`.
complete -c rlock -n 'test (count (commandline -opc)) -eq 3; and test (commandline -opc)[2] = help; and test (commandline -opc)[3] = sem' -a 'acquire release renew status exec'
complete -c rlock -n 'test (count (commandline -opc)) -eq 3; and test (commandline -opc)[2] = help; and test (commandline -opc)[3] = latch' -a 'set count-down await status'
complete -c rlock -n __rlock_wants_lock_name -a '(__rlock_lock_names)' -d 'Held lock'

# Global options, before or after the subcommand (not after exec's `--`).
set -l global 'not __rlock_exec_after_dashdash'
complete -c rlock -n $global -l url -x -a 'redis:// rediss:// unix:// redis-sentinel:// rediss-sentinel:// redis-cluster:// rediss-cluster:// redis-quorum:// rediss-quorum://' -d 'Redis server URL'
complete -c rlock -n $global -l password-file -r -F -d 'Read the password from this file'
complete -c rlock -n $global -l tls-ca-cert -r -F -d 'rediss: trust the CAs in this file'
complete -c rlock -n $global -l tls-ca-dir -x -a '(__fish_complete_directories)' -d 'rediss: trust the CAs in this directory'
complete -c rlock -n $global -l tls-cert -r -F -d 'rediss: client certificate'
complete -c rlock -n $global -l tls-key -r -F -d 'rediss: client private key (mode 600)'
complete -c rlock -n $global -l tls-insecure -d 'rediss: verify neither certificate nor host name'
complete -c rlock -n $global -l prefix -x -d 'Key prefix (default rlock:)'
complete -c rlock -n $global -l connect-timeout -x -d 'Connect timeout (default 2s)'
complete -c rlock -n $global -l timeout -x -d 'Per-request timeout, repeats and clean-up included (default 5s)'
complete -c rlock -n $global -l sync-replicas -x -d 'Acquisitions and renewals wait for N replicas (default 0, off)'
complete -c rlock -n $global -l sync-timeout -x -d 'How long --sync-replicas waits (default 1s)'
complete -c rlock -n $global -l layout -x -a 'rlock redisson' -d 'Whose key layout locks use (default rlock)'
complete -c rlock -n $global -s v -l verbose -d 'Explain on stderr what rlock waits for'
complete -c rlock -n $global -s q -l quiet -d 'Print no result JSON and no notices'
complete -c rlock -n $global -l format -x -a 'json table prometheus' -d 'Output format for listings'
complete -c rlock -n $global -l version -d 'Print the version and exit'
complete -c rlock -n $global -s h -l help -d 'Print help and exit'

# sem and its subcommands (sem exec also takes exec's options below).
set -l sem_action '__fish_seen_subcommand_from sem; and not __fish_seen_subcommand_from acquire release renew status exec'
complete -c rlock -n $sem_action -a acquire -d 'Take permits and print their ids'
complete -c rlock -n $sem_action -a release -d 'Give permits back (--force: all)'
complete -c rlock -n $sem_action -a renew -d 'Extend the lease of held permits'
complete -c rlock -n $sem_action -a status -d 'Capacity, permits in use, waiters (paged)'
complete -c rlock -n $sem_action -a exec -d 'Run a command while holding permits'
set -l sem_take '__fish_seen_subcommand_from sem; and __fish_seen_subcommand_from acquire exec; and not __rlock_exec_after_dashdash'
complete -c rlock -n $sem_take -l permits -x -d 'Capacity of the semaphore'
complete -c rlock -n $sem_take -l count -x -d 'Permits to take at once (default 1)'
complete -c rlock -n $sem_take -l resize -d 'Store --permits as the new capacity'
set -l sem_ids '__fish_seen_subcommand_from sem; and __fish_seen_subcommand_from release renew'
complete -c rlock -n $sem_ids -l permit -x -d 'Permit id (repeatable)'
complete -c rlock -n '__fish_seen_subcommand_from sem; and __fish_seen_subcommand_from release' -l force -d 'Free every permit'
complete -c rlock -n '__fish_seen_subcommand_from sem; and __fish_seen_subcommand_from renew' -l lease -x -d 'New lease from now (default 30s)'
complete -c rlock -n '__fish_seen_subcommand_from sem; and __fish_seen_subcommand_from status' -l limit -x -d 'Most permits and waiters listed (default 1000)'
complete -c rlock -n '__fish_seen_subcommand_from sem; and __fish_seen_subcommand_from status' -l after -x -d 'The page after the one whose next was C'

# lock, exec, sem acquire.
set -l lock_exec '__fish_seen_subcommand_from lock exec acquire; and not __rlock_exec_after_dashdash'
complete -c rlock -n $lock_exec -s w -l wait -x -a 'inf 10s 1m 5m 1h' -d 'Wait up to DUR for the lock (inf: forever)'
complete -c rlock -n $lock_exec -s n -l no-wait -d 'Do not wait (default)'
complete -c rlock -n $lock_exec -s E -l conflict-exit-code -x -d 'Exit code instead of 75 when not acquired'
complete -c rlock -n $lock_exec -l lease -x -d 'Lease of the lock (default 30s)'
complete -c rlock -n $lock_exec -l owner -x -d 'Owner to hold the lock as'
set -l lock_modes '__fish_seen_subcommand_from lock exec; and not __fish_seen_subcommand_from sem; and not __rlock_exec_after_dashdash'
complete -c rlock -n $lock_modes -l nb -d 'Do not wait, as flock --nb (default)'
complete -c rlock -n $lock_modes -l nonblock -d 'Do not wait, as flock --nonblock (default)'
complete -c rlock -n $lock_modes -s s -l shared -d 'A shared (read) hold: many readers, no writer'
complete -c rlock -n $lock_modes -s x -l exclusive -d 'An exclusive hold (the default)'
complete -c rlock -n '__fish_seen_subcommand_from exec; and not __fish_seen_subcommand_from sem; and not __rlock_exec_after_dashdash' -s c -l command -x -d 'Run CMD with $SHELL -c instead of -- CMD ARGS'

# unlock.
complete -c rlock -n '__fish_seen_subcommand_from unlock' -l owner -x -d 'Owner that holds the lock'
complete -c rlock -n '__fish_seen_subcommand_from unlock' -l force -d 'Release the lock whoever holds it'
complete -c rlock -n '__fish_seen_subcommand_from unlock' -s s -l shared -d 'Drop a shared (read) hold'

# inspect.
complete -c rlock -n '__fish_seen_subcommand_from inspect' -l type -x -a 'lock sem latch limiter queue lock,latch' \
    -d 'Only these object types (comma-separated)'
complete -c rlock -n '__fish_seen_subcommand_from inspect' -l watch \
    -d 'List again whenever something changes, until q or ^C'
complete -c rlock -n '__fish_seen_subcommand_from inspect' -l interval -x -a '500ms 1s 5s 30s' \
    -d 'With --watch: list again at least every DUR (default 1s)'

# latch and its subcommands.
set -l latch_subcmds set count-down await status
set -l latch_new "__fish_seen_subcommand_from latch; and not __fish_seen_subcommand_from $latch_subcmds"
complete -c rlock -n $latch_new -a set -d 'Create a latch with count N'
complete -c rlock -n $latch_new -a count-down -d 'Count a latch down (never below zero)'
complete -c rlock -n $latch_new -a await -d 'Wait until a latch reaches zero'
complete -c rlock -n $latch_new -a status -d 'Show a latch: count, ids, expiry'
set -l latch_set '__fish_seen_subcommand_from latch; and __fish_seen_subcommand_from set'
complete -c rlock -n $latch_set -l expire -x -d 'Expiry of the whole latch'
complete -c rlock -n $latch_set -l force -d 'Reset a live latch too'
set -l latch_down '__fish_seen_subcommand_from latch; and __fish_seen_subcommand_from count-down'
complete -c rlock -n $latch_down -l by -x -d 'Amount to count down (default 1)'
complete -c rlock -n $latch_down -l id -x -d 'Participant id: counts down only once'
set -l latch_await '__fish_seen_subcommand_from latch; and __fish_seen_subcommand_from await'
complete -c rlock -n $latch_await -s w -l wait -x -a 'inf 10s 1m 5m 1h' -d 'Wait up to DUR for zero (inf: forever)'
complete -c rlock -n $latch_await -s n -l no-wait -d 'Do not wait (default)'
complete -c rlock -n $latch_await -s E -l conflict-exit-code -x -d 'Exit code instead of 75 when not zero'
set -l latch_status '__fish_seen_subcommand_from latch; and __fish_seen_subcommand_from status'
complete -c rlock -n $latch_status -l limit -x -d 'About how many ids to list (default 1000)'
complete -c rlock -n $latch_status -l after -x -d 'The page after the one whose next was C'

# limit.
set -l limit_opts '__fish_seen_subcommand_from limit; and not __rlock_exec_after_dashdash'
complete -c rlock -n $limit_opts -l rate -x -d 'Calls of cost 1 per --per'
complete -c rlock -n $limit_opts -l per -x -a '1s 1m 1h 1d' -d 'The period of --rate'
complete -c rlock -n $limit_opts -l burst -x -d 'Calls that pass at once from idle (default 1)'
complete -c rlock -n $limit_opts -l cost -x -d 'What this call takes, 1..burst (default 1)'
complete -c rlock -n $limit_opts -l client -x -d 'A bucket per client: this call\'s client id'
complete -c rlock -n $limit_opts -l client-rate -x -d 'With --client: each client\'s rate per --per'
complete -c rlock -n $limit_opts -s w -l wait -x -a 'inf 10s 1m 5m 1h' -d 'When limited, wait up to DUR for the call to pass'
complete -c rlock -n $limit_opts -l peek -d 'Decide without consuming'
complete -c rlock -n $limit_opts -l reconfigure -d 'Store a different config, converting the state'
complete -c rlock -n $limit_opts -l fail-open -d 'Let the call through when Redis is unreachable'
complete -c rlock -n $limit_opts -s E -l conflict-exit-code -x -d 'Exit code instead of 75 when limited'
complete -c rlock -n $limit_opts -l reset -d 'Clear the limiter\'s state and config'
complete -c rlock -n $limit_opts -a -- -d 'End of rlock options; the command follows'

# exec.
set -l exec_opts '__fish_seen_subcommand_from exec; and not __rlock_exec_after_dashdash'
complete -c rlock -n $exec_opts -l on-lost -x -a 'TERM INT HUP QUIT KILL USR1 USR2' -d 'Signal for the command if the lock is lost'
complete -c rlock -n $exec_opts -l kill-after -x -d 'Send KILL this long after the on-lost signal'
complete -c rlock -n $exec_opts -l min-hold -x -d 'Keep the lock until DUR after acquisition'
complete -c rlock -n $exec_opts -l keep-secrets -d 'Let the command inherit RLOCK_PASSWORD and a password-bearing URL'
complete -c rlock -n $exec_opts -a -- -d 'End of rlock options; the command follows'
complete -c rlock -n __rlock_exec_after_dashdash -x -a '(__rlock_exec_command)'

# delay-push.
set -l dpush '__fish_seen_subcommand_from delay-push'
complete -c rlock -n $dpush -l delay -x -d 'Due DUR after the server clock now'
complete -c rlock -n $dpush -l at -x -d 'Due at TIME (RFC 3339 or Unix seconds)'
complete -c rlock -n $dpush -l id -x -d 'Item id: the same id again changes nothing'
complete -c rlock -n $dpush -l lines -d 'One item per stdin line'
complete -c rlock -n $dpush -l max-payload -x -d 'Largest payload accepted (default 1MiB)'

# delay-pop (with -- CMD it also takes exec's --on-lost, --kill-after, --min-hold, --keep-secrets).
set -l dpop '__fish_seen_subcommand_from delay-pop; and not __rlock_exec_after_dashdash'
complete -c rlock -n $dpop -s w -l wait -x -a 'inf 10s 1m 5m 1h' -d 'Wait up to DUR for a due item'
complete -c rlock -n $dpop -l count -x -d 'Take up to N items at once'
complete -c rlock -n $dpop -l visibility -x -d 'Lease of the item while CMD runs (default 30s)'
complete -c rlock -n $dpop -l max-deliveries -x -d 'After N deliveries an item is a dead letter'
complete -c rlock -n $dpop -l forever -d 'Keep serving the queue until INT/TERM'
complete -c rlock -n $dpop -l dead -d 'Read and remove dead letters'
complete -c rlock -n $dpop -s E -l conflict-exit-code -x -d 'Exit code instead of 75 when nothing was due'
complete -c rlock -n $dpop -l on-lost -x -a 'TERM INT HUP QUIT KILL USR1 USR2' -d 'Signal for the command if the lease is lost'
complete -c rlock -n $dpop -l kill-after -x -d 'Send KILL this long after the on-lost signal'
complete -c rlock -n $dpop -l min-hold -x -d 'Keep the lease until DUR after it was taken'
complete -c rlock -n $dpop -l keep-secrets -d 'Let the command inherit RLOCK_PASSWORD and a password-bearing URL'
complete -c rlock -n $dpop -a -- -d 'End of rlock options; the command follows'
