// A Java-side RFairLock for tests/integration/redisson_fair_test.cpp: Redisson's own fair
// lock scripts (redisson_fair_*.lua, verbatim) run as RedissonLock.lock() runs them: the
// waiter subscribes to its own channel redisson_lock__channel:{NAME}:<UUID>:<thread>,
// tries, and sleeps until a message or the ttl the script returned, then tries again; the
// holder's watchdog renews every lease/3 (RedissonBaseLock.renewExpirationAsync).
//   node fair_peer.js PORT NAME THREAD wait HOLD_MS  print "queued", "acquired <ms>" and
//                                                    "released <ms>" after HOLD_MS
//   node fair_peer.js PORT NAME THREAD rounds N LOG  N holds, "+" then "-" appended to LOG
//   node fair_peer.js PORT NAME THREAD enqueue       one attempt (queued), then go away
//   node fair_peer.js PORT NAME THREAD hold LEASE    hold with lease LEASE ms, never renew,
//                                                    print "held <ms>", exit
//   node fair_peer.js PORT NAME THREAD failed        acquireFailedAsync: leave the queue
// UUID: 00000000-0000-4000-8000-000000000001; threadWaitTime $FAIR_WAIT, else 300000
// (Redisson's fairLockWaitTimeout default).
'use strict';
const fs = require('fs');
const path = require('path');
const Redis = require('ioredis');

const [port, name, thread, mode, arg1, arg2] = process.argv.slice(2);
setTimeout(() => { console.error('fair_peer: deadline'); process.exit(3); }, 40000).unref();
const script = (f) => fs.readFileSync(path.join(__dirname, 'redisson_fair_' + f + '.lua'), 'utf8');
const TRY = script('try_lock'), UNLOCK = script('unlock'), FAILED = script('acquire_failed');
const LEASE = 30000, WAIT = Number(process.env.FAIR_WAIT || 300000);
const field = '00000000-0000-4000-8000-000000000001:' + thread;
const queue = 'redisson_lock_queue:{' + name + '}', timeouts = 'redisson_lock_timeout:{' + name + '}';
const channel = 'redisson_lock__channel:{' + name + '}';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const redis = new Redis({ host: '127.0.0.1', port: Number(port) });
  const sub = new Redis({ host: '127.0.0.1', port: Number(port) });
  let wake = null;
  sub.on('message', () => { if (wake) wake(); });
  await sub.subscribe(channel + ':' + field);
  const tryLock = (lease) => redis.eval(TRY, 3, name, queue, timeouts, lease, field, WAIT, Date.now());
  const lock = async (onQueued) => {
    for (let first = true; ; first = false) {
      const ttl = await tryLock(LEASE);
      if (ttl === null) return;
      if (first && onQueued) onQueued();
      await new Promise((r) => { wake = r; setTimeout(r, Math.max(ttl, 0)); });
      wake = null;
    }
  };
  let renewal = null;
  const watchdog = () => {
    renewal = setInterval(() => redis.eval(
      "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;",
      1, name, LEASE, field), LEASE / 3);
  };
  const unlock = async () => {
    clearInterval(renewal);
    const at = Date.now();
    await redis.eval(UNLOCK, 5, name, queue, timeouts, channel, 'redisson_unlock_latch:{' + name + '}:' + at,
      '0', LEASE, field, Date.now(), 'publish', 10000);
    return at;
  };
  if (mode === 'wait') {
    await lock(() => console.log('queued'));
    console.log('acquired ' + Date.now());
    watchdog();
    await sleep(Number(arg1));
    console.log('released ' + await unlock());
  } else if (mode === 'rounds') {
    for (let i = 0; i < Number(arg1); i++) {
      await lock();
      fs.appendFileSync(arg2, '+\n');
      await sleep(2);
      fs.appendFileSync(arg2, '-\n');
      await unlock();
    }
  } else if (mode === 'enqueue') {
    console.log('ttl ' + await tryLock(LEASE));
  } else if (mode === 'hold') {
    await lock();
    await redis.pexpire(name, Number(arg1));
    console.log('held ' + Date.now());
  } else if (mode === 'failed') {
    await redis.eval(FAILED, 2, queue, timeouts, field, WAIT);
  }
  redis.disconnect();
  sub.disconnect();
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
