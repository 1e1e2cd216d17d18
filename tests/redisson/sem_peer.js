// A Java-side RPermitExpirableSemaphore for tests/integration/redisson_sem_test.cpp:
// Redisson's own scripts (redisson_pes_*.lua, verbatim) run as
// RedissonPermitExpirableSemaphore.acquire(leaseTime) runs them: ids of 16 random bytes
// (sent decoded, printed as hex), expiry dates from this client's clock, the waiter
// subscribed to redisson_sc:{NAME} trying again on each message or at the nearest expiry
// the script returned (":<date>").
//   node sem_peer.js PORT NAME wait LEASE HOLD_MS  print "busy" if the first try fails, then
//                                                  "acquired <ms> <id>", hold HOLD_MS,
//                                                  release, print "released <ms>"
//   node sem_peer.js PORT NAME rounds N LOG LEASE  N acquisitions: "+" then "-" appended to LOG
//   node sem_peer.js PORT NAME take LEASE          acquire, print "held <ms> <id>", exit
//   node sem_peer.js PORT NAME set PERMITS         trySetPermits
//   node sem_peer.js PORT NAME release ID          tryRelease(ID): print true or false
// And a Java-side RSemaphore (redisson_rsem_*.lua, RedissonSemaphore.acquire(): anonymous
// permits, retried on each message on redisson_sc:{NAME}):
//   node sem_peer.js PORT NAME rwait HOLD_MS       print "busy" if the first try fails, then
//                                                  "acquired <ms>", hold, release, "released <ms>"
//   node sem_peer.js PORT NAME rrounds N LOG       N acquisitions: "+" then "-" appended to LOG
//   node sem_peer.js PORT NAME rset PERMITS        trySetPermits
// $SHARDED=1: Redisson's sharded mode (SSUBSCRIBE, the scripts told "spublish").
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const Redis = require('ioredis');

const [port, name, mode, arg1, arg2, arg3] = process.argv.slice(2);
setTimeout(() => { console.error('sem_peer: deadline'); process.exit(3); }, 60000).unref();
const script = (f) => fs.readFileSync(path.join(__dirname, 'redisson_pes_' + f + '.lua'), 'utf8');
const TRY = script('try_acquire'), RELEASE = script('try_release'), SET = script('try_set_permits');
const rscript = (f) => fs.readFileSync(path.join(__dirname, 'redisson_rsem_' + f + '.lua'), 'utf8');
const RTRY = rscript('try_acquire'), RRELEASE = rscript('release'), RSET = rscript('try_set_permits');
const NON_EXPIRABLE = 922337203685477;
const sharded = process.env.SHARDED === '1';
const PUBLISH = sharded ? 'spublish' : 'publish';
const timeout = '{' + name + '}:timeout', channel = 'redisson_sc:{' + name + '}';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const redis = new Redis({ host: '127.0.0.1', port: Number(port) });
  const sub = new Redis({ host: '127.0.0.1', port: Number(port) });
  let wake = null;
  sub.on(sharded ? 'smessage' : 'message', () => { if (wake) wake(); });
  if (sharded) await sub.ssubscribe(channel); else await sub.subscribe(channel);
  // tryAcquireAsync(ids, timeoutDate): 'OK', ':<nearest expiry date>' or null.
  const tryAcquire = async (id, lease) => {
    const date = lease > 0 ? Date.now() + lease : NON_EXPIRABLE;
    const r = await redis.evalBuffer(TRY, 3, name, timeout, channel, 1, date, Date.now(),
      NON_EXPIRABLE, PUBLISH, Buffer.from(id, 'hex'));
    return r === null ? null : r.toString();
  };
  const acquire = async (lease, onBusy) => {
    const id = crypto.randomBytes(16).toString('hex');
    for (let first = true; ; first = false) {
      const r = await tryAcquire(id, lease);
      if (r === 'OK') return id;
      if (first && onBusy) onBusy();
      const nearest = r === null ? 60000 : Number(r.substring(1)) - Date.now();
      await new Promise((res) => { wake = res; setTimeout(res, Math.max(nearest, 0)); });
      wake = null;
    }
  };
  const release = async (id) => {
    const at = Date.now();
    await redis.eval(RELEASE, 3, name, channel, timeout, Buffer.from(id, 'hex'), 1, Date.now(), PUBLISH);
    return at;
  };
  // RSemaphore.acquire(1): tryAcquire, else wait for a message and try again.
  const racquire = async (onBusy) => {
    for (let first = true; ; first = false) {
      if (await redis.eval(RTRY, 1, name, 1) === 1) return;
      if (first && onBusy) onBusy();
      await new Promise((res) => { wake = res; setTimeout(res, 60000); });
      wake = null;
    }
  };
  const rrelease = async () => {
    const at = Date.now();
    await redis.eval(RRELEASE, 2, name, channel, 1, PUBLISH);
    return at;
  };
  if (mode === 'rwait') {
    await racquire(() => console.log('busy'));
    console.log('acquired ' + Date.now());
    await sleep(Number(arg1));
    console.log('released ' + await rrelease());
  } else if (mode === 'rrounds') {
    for (let i = 0; i < Number(arg1); i++) {
      await racquire();
      fs.appendFileSync(arg2, '+\n');
      await sleep(2);
      fs.appendFileSync(arg2, '-\n');
      await rrelease();
    }
  } else if (mode === 'rset') {
    console.log(String(await redis.eval(RSET, 2, name, channel, Number(arg1), PUBLISH)));
  } else if (mode === 'wait') {
    const id = await acquire(Number(arg1), () => console.log('busy'));
    console.log('acquired ' + Date.now() + ' ' + id);
    await sleep(Number(arg2));
    console.log('released ' + await release(id));
  } else if (mode === 'rounds') {
    for (let i = 0; i < Number(arg1); i++) {
      const id = await acquire(Number(arg3));
      fs.appendFileSync(arg2, '+\n');
      await sleep(2);
      fs.appendFileSync(arg2, '-\n');
      await release(id);
    }
  } else if (mode === 'take') {
    const id = await acquire(Number(arg1));
    console.log('held ' + Date.now() + ' ' + id);
  } else if (mode === 'release') {
    console.log(String(await redis.eval(RELEASE, 3, name, channel, timeout, Buffer.from(arg1, 'hex'), 1,
      Date.now(), PUBLISH) === 1));
  } else if (mode === 'set') {
    console.log(String(await redis.eval(SET, 2, name, channel, Number(arg1), PUBLISH)));
  }
  redis.disconnect();
  sub.disconnect();
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
