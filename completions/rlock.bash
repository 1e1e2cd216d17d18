# bash completion for rlock(1)                              -*- shell-script -*-
# Installed as $datadir/bash-completion/completions/rlock.

# Lock names held now, from `rlock inspect` run with the global options typed so far:
# quiet, at most about a second, nothing at all on failure.
_rlock_lock_names()
{
    local -a globals=()
    local i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --url | --password-file | --prefix | --tls-ca-cert | --tls-ca-dir | --tls-cert | --tls-key) globals+=("${words[i]}" "${words[i + 1]}"); ((i++)) ;;
            --url=* | --password-file=* | --prefix=* | --tls-*=* | --tls-insecure) globals+=("${words[i]}") ;;
        esac
    done
    timeout 2 "${words[0]}" "${globals[@]}" --connect-timeout 300ms --timeout 500ms \
        inspect --type lock -- "${cur}*" 2>/dev/null |
        grep -o '"name":"[^"\\]*"' | sed 's/^"name":"//; s/"$//'
}

_rlock()
{
    local cur prev words cword split=false
    if declare -F _init_completion >/dev/null; then
        _init_completion -s || return
    else
        # Without bash-completion: no --opt=value splitting, no _filedir.
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi

    local subcommands='lock unlock exec sem inspect latch limit delay-push delay-pop doctor help'
    local global_opts='--url --password-file --prefix --connect-timeout
        --timeout --sync-replicas --sync-timeout --layout --tls-ca-cert --tls-ca-dir --tls-cert --tls-key
        --tls-insecure -v --verbose -q --quiet --format --version -h --help'
    # Every option that takes a value, global or per subcommand.
    local arg_opts=' --url --password-file --prefix --connect-timeout --timeout
        --sync-replicas --sync-timeout --layout --tls-ca-cert --tls-ca-dir --tls-cert --tls-key
        --format --owner --lease -w --wait -E --conflict-exit-code --on-lost -c --command
        --kill-after --min-hold --expire --by --id --permits --count --permit --type
        --rate --per --burst --cost --client --client-rate
        --delay --at --max-payload --visibility --max-deliveries --interval '
    arg_opts=${arg_opts//$'\n'/ }

    # Find the subcommand (and sem's or latch's own), the positionals after it, and `--` (exec).
    local i word subcmd='' semcmd='' latchcmd='' npos=0 dashdash=0
    for ((i = 1; i < cword; i++)); do
        word=${words[i]}
        if [[ ($subcmd == exec || $semcmd == exec || $subcmd == limit || $subcmd == delay-pop) &&
            $word == -- ]]; then
            dashdash=$i
            break
        fi
        case $word in
            --*=*) ;;
            -*)
                # An option's value is the next word.
                [[ $arg_opts == *" $word "* ]] && ((i++))
                ;;
            *)
                if [[ -z $subcmd ]]; then
                    subcmd=$word
                elif [[ $subcmd == sem && -z $semcmd ]]; then
                    semcmd=$word
                else
                    [[ $subcmd == latch && $npos -eq 0 ]] && latchcmd=$word
                    ((npos++))
                fi
                ;;
        esac
    done

    if ((dashdash > 0)); then
        if declare -F _command_offset >/dev/null; then
            _command_offset $((dashdash + 1))
        else
            COMPREPLY=($(compgen -c -- "$cur"))
        fi
        return
    fi

    case $prev in
        --format)
            COMPREPLY=($(compgen -W 'json table prometheus' -- "$cur"))
            return
            ;;
        --type)
            # A comma-separated list: complete the type after the last comma.
            local done_types=${cur%"${cur##*,}"}
            COMPREPLY=($(compgen -P "$done_types" -W 'lock sem latch limiter queue' -- "${cur##*,}"))
            return
            ;;
        --on-lost)
            COMPREPLY=($(compgen -W 'TERM INT HUP QUIT KILL USR1 USR2' -- "$cur"))
            return
            ;;
        --password-file | --tls-ca-cert | --tls-cert | --tls-key)
            if declare -F _filedir >/dev/null; then
                _filedir
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return
            ;;
        --tls-ca-dir)
            if declare -F _filedir >/dev/null; then
                _filedir -d
            else
                COMPREPLY=($(compgen -d -- "$cur"))
            fi
            return
            ;;
        --url)
            COMPREPLY=($(compgen -W 'redis:// rediss:// unix:// redis-sentinel:// rediss-sentinel:// redis-cluster:// rediss-cluster:// redis-quorum:// rediss-quorum://' -- "$cur"))
            [[ ${#COMPREPLY[@]} -gt 0 ]] && compopt -o nospace 2>/dev/null
            return
            ;;
        -w | --wait)
            COMPREPLY=($(compgen -W 'inf 10s 1m 5m 1h' -- "$cur"))
            return
            ;;
        --layout)
            COMPREPLY=($(compgen -W 'rlock redisson' -- "$cur"))
            return
            ;;
        --interval)
            COMPREPLY=($(compgen -W '500ms 1s 5s 30s' -- "$cur"))
            return
            ;;
        --prefix | --connect-timeout | --timeout | --sync-replicas | --sync-timeout | --owner | --lease | \
            -E | --conflict-exit-code | --kill-after | --min-hold | --permits | --count | --permit | \
            --expire | --by | --id | --rate | --per | --burst | --cost | --client | --client-rate | \
                --delay | --at | --max-payload | --visibility | --max-deliveries)
            # A free-form value: nothing sensible to offer.
            return
            ;;
    esac
    $split && return

    local opts
    case $subcmd in
        '')
            if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$global_opts" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "$subcommands" -- "$cur"))
            fi
            ;;
        lock)
            opts='--owner --lease -w --wait -n --no-wait --nb --nonblock -s --shared -x --exclusive
                -E --conflict-exit-code'
            [[ $cur == -* ]] && COMPREPLY=($(compgen -W "$opts $global_opts" -- "$cur"))
            ;;
        unlock)
            opts='--owner -s --shared --force'
            if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$opts $global_opts" -- "$cur"))
            else # NAME...: each of several names is a held lock too
                local IFS=$'\n'
                COMPREPLY=($(compgen -W "$(_rlock_lock_names)" -- "$cur"))
            fi
            ;;
        exec)
            opts='-w --wait -n --no-wait --nb --nonblock -s --shared -x --exclusive -E
                --conflict-exit-code --lease --owner --on-lost --kill-after --min-hold --keep-secrets -c --command'
            if [[ $cur == -* ]]; then
                ((npos >= 1)) && opts="-- $opts"
                COMPREPLY=($(compgen -W "$opts $global_opts" -- "$cur"))
            elif ((npos >= 1)); then
                # After a NAME (or several), `--` starts the command.
                COMPREPLY=($(compgen -W '--' -- "$cur"))
            fi
            ;;
        sem)
            case $semcmd in
                '') COMPREPLY=($(compgen -W 'acquire release renew status exec' -- "$cur")) ;;
                acquire) opts='--permits --count --resize --owner --lease -w --wait -n --no-wait
                    -E --conflict-exit-code' ;;
                release) opts='--permit --force' ;;
                renew) opts='--permit --lease' ;;
                status) opts='--limit --after' ;;
                exec)
                    opts='--permits --count --resize -w --wait -n --no-wait -E --conflict-exit-code
                        --lease --owner --on-lost --kill-after --min-hold --keep-secrets'
                    if ((npos >= 1)); then
                        COMPREPLY=($(compgen -W '--' -- "$cur"))
                        return
                    fi
                    ;;
            esac
            [[ -n $semcmd && $cur == -* ]] && COMPREPLY=($(compgen -W "$opts $global_opts" -- "$cur"))
            ;;
        inspect)
            if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "--type --watch --interval $global_opts" -- "$cur"))
            elif ((npos == 0)); then
                local IFS=$'\n'
                COMPREPLY=($(compgen -W "$(_rlock_lock_names)" -- "$cur"))
            fi
            ;;
        latch)
            case $latchcmd in
                '') opts='' ;;
                set) opts='--expire --force' ;;
                count-down) opts='--by --id' ;;
                await) opts='-w --wait -n --no-wait -E --conflict-exit-code' ;;
                status) opts='--limit --after' ;;
                *) opts='' ;;
            esac
            if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$opts $global_opts" -- "$cur"))
            elif [[ -z $latchcmd ]]; then
                COMPREPLY=($(compgen -W 'set count-down await status' -- "$cur"))
            fi
            ;;
        limit)
            opts='--rate --per --burst --cost --client --client-rate -w --wait --peek --reconfigure
                --fail-open -E --conflict-exit-code --reset'
            if ((npos >= 1)) && [[ $cur != -* ]]; then
                COMPREPLY=($(compgen -W '--' -- "$cur"))
            elif [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$opts $global_opts" -- "$cur"))
            fi
            ;;
        delay-push)
            opts='--delay --at --id --lines --max-payload'
            [[ $cur == -* ]] && COMPREPLY=($(compgen -W "$opts $global_opts" -- "$cur"))
            ;;
        delay-pop)
            opts='-w --wait --count --visibility --max-deliveries --forever --dead
                -E --conflict-exit-code --on-lost --kill-after --min-hold --keep-secrets'
            if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$opts -- $global_opts" -- "$cur"))
            elif ((npos >= 1)); then
                COMPREPLY=($(compgen -W '--' -- "$cur"))
            fi
            ;;
        doctor)
            [[ $cur == -* ]] && COMPREPLY=($(compgen -W "$global_opts" -- "$cur"))
            ;;
        help)
            if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$global_opts" -- "$cur"))
            elif ((npos == 0)); then
                COMPREPLY=($(compgen -W "$subcommands" -- "$cur"))
            elif ((npos == 1)); then
                case ${words[cword - 1]} in
                    sem) COMPREPLY=($(compgen -W 'acquire release renew status exec' -- "$cur")) ;;
                    latch) COMPREPLY=($(compgen -W 'set count-down await status' -- "$cur")) ;;
                esac
            fi
            ;;
    esac
} &&
    complete -F _rlock rlock

# ex: filetype=sh
