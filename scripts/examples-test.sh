#!/usr/bin/env bash
# Checks the recipes of examples/ by what can run here, against a throwaway redis-server on
# a private unix socket:
# - the systemd units pass `systemd-analyze verify` (in a scratch root holding the units,
#   systemd's own and stand-ins for the programs they start);
# - the crontab's schedule and the CI and Kubernetes YAML files parse and have the keys
#   their runners require (scripts/examples-recipe.py, which also extracts the commands);
# - the commands they run do what the recipes say: the nightly report (crontab, systemd
#   timer, CronJob) runs once when two hosts start it, and so do the --once-per CronJob and
#   timer, each run recorded; two CI deploys (GitHub, GitLab)
#   run one after the other, the second queued behind the first; the queue consumer
#   service handles an item, and on the TERM of `systemctl stop` hands TERM to the running
#   handler, gives its item back and exits 0.
# The recipes' programs (/usr/local/bin/..., ./deploy.sh) are stand-ins that record what
# ran; /usr/bin/rlock is the binary RLOCK_BIN names (default: build/rlock, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh python3-yaml systemd
if [ -z "${RLOCK_BIN:-}" ]; then
  RLOCK_BIN=build/rlock
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRLOCK_WERROR=ON >/dev/null
  cmake --build build -j"$(nproc)" --target rlock
fi
rlock_bin=$(realpath "$RLOCK_BIN")

tmp=$(mktemp -d)
redis_pid=
consumer_pid=
cleanup() {
  set +e  # a process that already ended must not end the cleanup
  [ -n "$consumer_pid" ] && kill -KILL "$consumer_pid" 2>/dev/null
  for pid in $(jobs -p); do [ "$pid" = "$redis_pid" ] || kill "$pid" 2>/dev/null; done
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "examples-test: $*" >&2; exit 1; }
recipe() { /usr/bin/python3 scripts/examples-recipe.py "$@"; }

redis-server --port 0 --unixsocket "$tmp/redis.sock" --unixsocketperm 700 --save '' \
  --appendonly no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
redis_pid=$!
export RLOCK_URL="unix://$tmp/redis.sock"
unset REDIS_URL RLOCK_PASSWORD RLOCK_CONFIG RLOCK_OWNER RLOCK_PREFIX
export HOME="$tmp/home"  # no user config file of this machine
for _ in $(seq 200); do [ -S "$tmp/redis.sock" ] && break; sleep 0.05; done
[ -S "$tmp/redis.sock" ] || fail "redis-server did not start: $(cat "$tmp/redis.log")"

# The programs the recipes start, as stand-ins in $tmp/bin (first on PATH, with rlock).
mkdir -p "$tmp/bin" "$tmp/home" "$tmp/checkout"
ln -s "$rlock_bin" "$tmp/bin/rlock"
export PATH="$tmp/bin:$PATH" RAN="$tmp/ran" EVENTS="$tmp/events"
cat >"$tmp/bin/nightly-report" <<'EOF'
#!/bin/sh
echo "report by $RLOCK_OWNER" >>"$RAN"
EOF
for job in nightly-summary hourly-sync; do
  # shellcheck disable=SC2016  # the stand-in expands them
  printf '#!/bin/sh\necho "%s by $RLOCK_OWNER" >>"$RAN"\n' "$job" >"$tmp/bin/$job"
  chmod +x "$tmp/bin/$job"
done
cat >"$tmp/checkout/deploy.sh" <<'EOF'
#!/bin/sh
# The first deploy says it started and ends when the test says so (a line on $GATE).
echo "start $RLOCK_OWNER $*" >>"$RAN"
if [ -n "${GATE:-}" ]; then echo started >"$EVENTS"; read -r _ <"$GATE"; fi
echo "end $RLOCK_OWNER" >>"$RAN"
EOF
cat >"$tmp/bin/handle-job" <<'EOF'
#!/bin/bash
payload=$(cat)
if [ "$payload" = slow ]; then
  trap 'echo "term $payload" >>"$RAN"; exit 143' TERM
  echo "started $payload" >"$EVENTS"
  sleep 600 & wait $!
fi
echo "handled $payload" >>"$RAN"
echo "handled $payload" >"$EVENTS"
EOF
chmod +x "$tmp/bin/nightly-report" "$tmp/checkout/deploy.sh" "$tmp/bin/handle-job"
mkfifo "$tmp/events" "$tmp/gate"
exec 3<>"$tmp/events"  # held open both ways: neither the stand-ins' writes nor our reads block on open
# The recipe's paths, as the stand-ins are here.
localize() { sed -e "s#/usr/local/bin/#$tmp/bin/#g" -e 's#/usr/bin/rlock#rlock#g'; }
next_event() { read -r -t 30 -u 3 line || fail "no '$1' within 30s"; [ "$line" = "$1" ] || fail "'$line', not '$1'"; }
ran() { cat "$RAN" 2>/dev/null; }

echo "== systemd-analyze verify examples/systemd/*"
root="$tmp/root"
mkdir -p "$root/etc/systemd/system" "$root/usr/lib/systemd" "$root/usr/bin" "$root/usr/local/bin"
cp -a /usr/lib/systemd/system "$root/usr/lib/systemd/"
cp examples/systemd/* "$root/etc/systemd/system/"
for p in /usr/bin/rlock /usr/local/bin/nightly-report /usr/local/bin/handle-job \
         /usr/local/bin/nightly-summary /usr/local/bin/hourly-sync; do
  printf '#!/bin/sh\n' >"$root$p" && chmod +x "$root$p"
done
units=$(cd examples/systemd && ls)
# shellcheck disable=SC2086
verify=$(systemd-analyze verify --root="$root" $units 2>&1) || fail "systemd-analyze verify: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify: $verify"
grep -qx 'KillMode=mixed' examples/systemd/jobs-consumer.service ||
  fail "jobs-consumer.service: the test below stops it as KillMode=mixed does"

# Two hosts start the same nightly report: one runs it, the other exits 0 without running
# it (-E 0), and a third run within --min-hold does not run it either.
once_per_night() {
  local name=$1 script=$2
  : >"$RAN"
  for host in a b c; do
    POD_NAME="nightly-report-$host" bash -ec "$script" || fail "$name: exit $? on host $host"
  done
  [ "$(ran | wc -l)" = 1 ] || fail "$name: the report ran $(ran | wc -l) times: $(ran)"
  rlock -q unlock --force nightly-report  # the next recipe starts afresh
}
for spec in "crontab examples/crontab" "systemd examples/systemd/nightly-report.service" \
            "kubernetes examples/kubernetes/cronjob.yaml"; do
  echo "== $spec: the report runs once"
  # shellcheck disable=SC2086
  script=$(recipe $spec | localize)
  once_per_night "$spec" "$script"
done

# Three hosts (or clusters) start a --once-per recipe in one slot: one runs it, the others
# exit 0 at once, and its run is recorded.
for spec in "kubernetes examples/kubernetes/cronjob-once-per.yaml nightly-summary" \
            "systemd examples/systemd/hourly-sync.service hourly-sync"; do
  echo "== ${spec% *}: runs once in its slot"
  # shellcheck disable=SC2086
  script=$(recipe ${spec% *} | localize)
  : >"$RAN"
  for host in a b c; do
    POD_NAME="$host" RLOCK_OWNER="$host" bash -ec "$script" || fail "$spec: exit $? on host $host"
  done
  [ "$(ran | wc -l)" = 1 ] || fail "$spec: ran $(ran | wc -l) times: $(ran)"
  rlock inspect --type runs "${spec##* }" | grep -q '"status":"exited","exit_code":0' ||
    fail "$spec: the run is not recorded: $(rlock inspect --type runs "${spec##* }")"
done

# Two pipelines deploy at once: the second queues behind the first (exec --wait) and
# deploys after it.
one_deploy_at_a_time() {
  local name=$1 script=$3
  : >"$RAN"
  (cd "$tmp/checkout" && GATE="$tmp/gate" GITHUB_RUN_ID=1 CI_PIPELINE_ID=1 \
     bash -ec "$script") >"$tmp/first.out" 2>&1 &
  local first=$!
  next_event started
  (cd "$tmp/checkout" && GITHUB_RUN_ID=2 CI_PIPELINE_ID=2 bash -ec "$script") >"$tmp/second.out" 2>&1 &
  local second=$!
  for _ in $(seq 300); do  # until the second deploy waits in the lock's queue
    rlock inspect --type lock deploy-prod | grep -q '"waiters_total":1' && break
    sleep 0.1
  done
  rlock inspect --type lock deploy-prod | grep -q '"waiters_total":1' ||
    fail "$name: the second deploy did not queue: $(rlock inspect deploy-prod)"
  echo go >"$tmp/gate"
  wait "$first" || fail "$name: the first deploy exited $?: $(cat "$tmp/first.out")"
  wait "$second" || fail "$name: the second deploy exited $?: $(cat "$tmp/second.out")"
  local a="$2-1-1" b="$2-2-1"  # the owners the recipe makes of the run/pipeline and job ids
  [ "$(ran)" = "$(printf 'start %s --env prod\nend %s\nstart %s --env prod\nend %s' "$a" "$a" "$b" "$b")" ] || fail "$name: the deploys ran as: $(ran)"
}
echo "== github-actions/deploy.yml: one deploy at a time"
script=$(recipe github examples/github-actions/deploy.yml | localize)
GITHUB_RUN_ATTEMPT=1 one_deploy_at_a_time github-actions gha "$script"
# Three deploys: the first runs (held at its gate), the second queues, the third queues
# and makes the second give up at once (79, let pass by the recipe), naming the third.
newest_wins() {
  local name=$1 prefix=$2 script=$3
  : >"$RAN"
  (cd "$tmp/checkout" && GATE="$tmp/gate" GITHUB_RUN_ID=1 CI_PIPELINE_ID=1 \
     bash -ec "$script") >"$tmp/first.out" 2>&1 &
  local first=$!
  next_event started
  queued() {
    for _ in $(seq 300); do
      rlock inspect --type lock deploy-prod | grep -q "\"owner\":\"$1\"" && return 0
      sleep 0.1
    done
    fail "$name: $1 did not queue: $(rlock inspect deploy-prod)"
  }
  (cd "$tmp/checkout" && GITHUB_RUN_ID=2 CI_PIPELINE_ID=2 bash -ec "$script") >"$tmp/second.out" 2>&1 &
  local second=$!
  queued "$prefix-2-1"
  (cd "$tmp/checkout" && GITHUB_RUN_ID=3 CI_PIPELINE_ID=3 bash -ec "$script") >"$tmp/third.out" 2>&1 &
  local third=$!
  wait "$second" || fail "$name: the superseded deploy exited $?: $(cat "$tmp/second.out")"
  grep -q "superseded.*owner '$prefix-3-1'" "$tmp/second.out" ||
    fail "$name: the superseded deploy said: $(cat "$tmp/second.out")"
  echo go >"$tmp/gate"
  wait "$first" || fail "$name: the first deploy exited $?: $(cat "$tmp/first.out")"
  wait "$third" || fail "$name: the newest deploy exited $?: $(cat "$tmp/third.out")"
  local a="$prefix-1-1" c="$prefix-3-1"
  [ "$(ran)" = "$(printf 'start %s --env prod\nend %s\nstart %s --env prod\nend %s' "$a" "$a" "$c" "$c")" ] ||
    fail "$name: the deploys ran as: $(ran)"
}
echo "== github-actions/deploy-newest.yml: a newer deploy supersedes the queued one"
script=$(recipe github examples/github-actions/deploy-newest.yml | localize)
GITHUB_RUN_ATTEMPT=1 newest_wins deploy-newest gha "$script"
echo "== gitlab-ci/gitlab-ci-newest.yml: resource_group newest_first, across projects"
script=$(recipe gitlab examples/gitlab-ci/gitlab-ci-newest.yml | localize)
CI_JOB_ID=1 newest_wins gitlab-ci-newest gitlab "$script"
echo "== gitlab-ci/gitlab-ci.yml: one deploy at a time"
script=$(recipe gitlab examples/gitlab-ci/gitlab-ci.yml | localize)
CI_JOB_ID=1 one_deploy_at_a_time gitlab-ci gitlab "$script"

# Two members of the pool held: the build tests on the third. All three held: the build
# queues on every member and tests on the first one freed.
echo "== jenkins/Jenkinsfile: tests on whichever staging environment is free"
script=$(recipe jenkins examples/jenkins/Jenkinsfile | localize)
cat >"$tmp/checkout/run-integration-tests.sh" <<'EOF2'
#!/bin/sh
echo "tests $RLOCK_OWNER $*" >>"$RAN"
EOF2
chmod +x "$tmp/checkout/run-integration-tests.sh"
: >"$RAN"
rlock -q lock staging-1 staging-2 --owner other-team --lease 10m
(cd "$tmp/checkout" && JOB_NAME=web BUILD_NUMBER=7 bash -ec "$script") >"$tmp/jenkins.out" 2>&1 ||
  fail "jenkins: the build exited $?: $(cat "$tmp/jenkins.out")"
[ "$(ran)" = "tests jenkins-web-7 --env staging-3" ] || fail "jenkins: the tests ran as: $(ran)"
: >"$RAN"
rlock -q lock staging-3 --owner other-team --lease 10m
(cd "$tmp/checkout" && JOB_NAME=web BUILD_NUMBER=8 bash -ec "$script") >"$tmp/jenkins.out" 2>&1 &
build=$!
for _ in $(seq 300); do  # until the build waits in every member's queue
  rlock inspect --type lock 'staging-*' | grep -o '"waiters_total":1' | wc -l | grep -qx 3 && break
  sleep 0.1
done
rlock inspect --type lock 'staging-*' | grep -o '"waiters_total":1' | wc -l | grep -qx 3 ||
  fail "jenkins: the build did not queue on every member: $(rlock inspect 'staging-*')"
rlock -q unlock staging-2 --owner other-team
wait "$build" || fail "jenkins: the queued build exited $?: $(cat "$tmp/jenkins.out")"
[ "$(ran)" = "tests jenkins-web-8 --env staging-2" ] || fail "jenkins: the queued tests ran as: $(ran)"
rlock -q unlock staging-1 staging-3 --owner other-team

echo "== systemd/jobs-consumer.service: handles items, stops cleanly on TERM"
consumer=$(recipe systemd examples/systemd/jobs-consumer.service | localize)
: >"$RAN"
bash -c "exec $consumer" >"$tmp/consumer.out" 2>&1 &
consumer_pid=$!
rlock -q delay-push jobs fast --delay 0
next_event "handled fast"
rlock -q delay-push jobs slow --delay 0
next_event "started slow"
kill -TERM "$consumer_pid"  # what `systemctl stop` does with KillMode=mixed
status=0
timeout 30 tail --pid="$consumer_pid" -f /dev/null || fail "the consumer did not stop within 30s of TERM"
wait "$consumer_pid" || status=$?
consumer_pid=
[ "$status" = 0 ] || fail "the consumer exited $status on TERM: $(cat "$tmp/consumer.out")"
[ "$(ran)" = "$(printf 'handled fast\nterm slow')" ] || fail "the handler ran as: $(ran)"
queue=$(rlock inspect --type queue jobs)
echo "$queue" | /usr/bin/python3 -c '
import json, sys
q = json.load(sys.stdin)
assert len(q) == 1 and q[0]["scheduled"] + q[0]["due"] == 1 and q[0]["in_flight_total"] == 0, q
' || fail "after the stop, the queue is not the slow item given back: $queue"

echo "== examples passed"
